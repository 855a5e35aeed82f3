"""Getting memories to the server: the retain queue, its journal on disk, the sender and the worker
thread.
"""

"""Getting memories to the server: the retain queue, its journal on disk, the sender and the one
worker thread that calls them.

``items`` (a memory, routes, batches) → ``queue`` (the kernel side: state, lock, decisions) →
``journal`` (everything on disk: ``journal_file`` is the SQLite file, ``spool`` the file each
``%retain`` appends to) → ``worker`` (the thread: jobs, the journal's upkeep, sending through
``sender``, which also does read-after-write); ``recent`` is the panel's feed of recent items.
"""

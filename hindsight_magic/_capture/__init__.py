"""Cells → transcripts: skip rules, output capture, redaction, the auto-retainer. No IPython here:
the hook that feeds it is ``_ipython.extension``.
"""

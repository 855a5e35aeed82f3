"""ipython."""

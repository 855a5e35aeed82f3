"""IPython glue: the magics, every ``%hindsight`` handler, the cell hook, loading and unloading."""

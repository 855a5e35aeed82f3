"""``%hindsight panel``: the live ipywidgets panel (ipywidgets imported only when one is shown)."""

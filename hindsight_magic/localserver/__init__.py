"""localserver."""

"""Memory as the user reads it: scope, recall and reflect results with provenance, mental models."""

"""What users see: result displays, ``%hindsight status``, ``doctor`` and the live panel."""

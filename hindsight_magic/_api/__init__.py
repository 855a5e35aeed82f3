"""HTTP to Hindsight: the client (one method per endpoint), the exception and its classification,
the reply models. It knows no notebook: the words shown to users are ``_diagnosis``.
"""

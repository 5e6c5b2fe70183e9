"""Secret redaction: the one step everything engram persists beyond a thread's messages goes through.

See `engram.stores.secrets.redact` for what is found and what is left alone.
"""

from engram.stores.secrets.cards import luhn_valid
from engram.stores.secrets.redact import REDACTED, Redaction, is_only_secret, redact, redact_data

__all__ = ["REDACTED", "Redaction", "is_only_secret", "luhn_valid", "redact", "redact_data"]

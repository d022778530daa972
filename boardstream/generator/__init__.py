"""A deterministic generator of member and board records shaped like production's."""

"""Entry points of the API tier's daemon."""

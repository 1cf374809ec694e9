"""Example handlers that `inbox dev` runs (not part of the installed package)."""

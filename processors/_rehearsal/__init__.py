"""Rehearsals: a router's handlers run on stored events in transactions that always roll
back, to see what a replay would do (``inbox replay --rehearse``,
``processors.testing.rehearse``)."""

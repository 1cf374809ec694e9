"""The example handlers that ``inbox dev`` runs when no handlers of your own are configured
(``processors.examples.handlers:router``), and the tables they write (``schema.sql``)."""

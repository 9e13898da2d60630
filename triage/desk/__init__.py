"""``triage desk``: the support desk, a shared paste service that keeps every case.

Cases are stored in a database (an SQLite file in the user's data folder by default, or
PostgreSQL by URL for a team server; schema migrations in ``migrations/``), so a support
engineer sees whether a failure was seen before and what fixed it. The web pages and the JSON
API live in ``app.py``; what a case stores in ``intake.py``; the queries in ``storage.py``.

Nothing here is imported unless ``triage desk`` runs: it needs the ``desk`` extra
(``pip install 'hip-triage[desk]'``).
"""

"""Issue automation: triage a GitHub crash-report issue and keep one comment and one label up to date.

``action.yml`` runs ``python -m triage.issuebot`` on ``issues`` (opened, edited) and ``issue_comment``
(created, edited) events. One job a module:

- ``sources``: the issue's body and comments as whole texts, named after where they came from;
- ``fetch``: attachment links (GitHub's attachment hosts only) and downloads without the token;
- ``api``: the REST API with retries, and whose comment is the bot's (``identity``);
- ``bot``: the triage of what was read, the comment and labels to set (``plan``), and setting them;
- ``cli``: arguments, the event payload, the dry run and the exit codes.
"""

from triage.issuebot.bot import labels_for
from triage.issuebot.sources import MARKER

__all__ = ["MARKER", "labels_for"]

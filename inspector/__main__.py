"""``python -m inspector`` runs the command line."""

from inspector.cli import run

run()

"""``python -m retrieval_gate`` runs the ``gate`` command."""

from retrieval_gate.cli import main

main()

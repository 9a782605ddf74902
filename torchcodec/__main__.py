"""``python -m torchcodec``: the command line (torchcodec/_cli.py)."""
from torchcodec._cli import main

raise SystemExit(main())

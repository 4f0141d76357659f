"""`python -m fleetsim` is the `fleetsim` command."""

from fleetsim.cli import main

main()

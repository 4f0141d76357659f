"""`python -m monitor` is the `planwatch` command."""

from monitor.cli.main import main

main()

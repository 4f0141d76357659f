"""The `planwatch` command line."""

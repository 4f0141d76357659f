"""Sizing: the seeds' Steps 1-7 as pure functions, each number with its formula."""

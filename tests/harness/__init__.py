"""Test helpers: real Prometheus processes, backfill histories, loopback servers."""

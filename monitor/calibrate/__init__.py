"""Calibration of a tier's efficiencies from serving benchmark results (`planwatch calibrate`)."""

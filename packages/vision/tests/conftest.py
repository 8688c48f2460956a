"""Shared fixtures for embervision's tests."""

"""Shared fixtures for emberrec's tests."""

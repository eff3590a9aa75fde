"""Shared test helpers: real multi-process gloo groups and skip markers."""

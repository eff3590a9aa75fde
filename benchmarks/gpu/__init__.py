"""Prepared benchmark scripts that need a GPU (run on a GPU machine; a tiny CPU smoke run is tested)."""

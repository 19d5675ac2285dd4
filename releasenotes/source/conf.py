"""Sphinx configuration of cyquota's release notes (reno)."""

project = 'cyquota Release Notes'
copyright = 'cyquota contributors'
extensions = ['reno.sphinxext']
master_doc = 'index'
exclude_patterns = []
html_theme = 'alabaster'

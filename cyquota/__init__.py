"""cyquota: accelerator quota usage and reservation service."""

"""cyquota's database: models, transaction access and migrations."""

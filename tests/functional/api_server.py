"""A real ``cyquota-api`` process on 127.0.0.1 for functional tests:
``benchmarks.support.ApiServer``, which the REST benchmark uses too."""

from benchmarks import support

ApiServer = support.ApiServer

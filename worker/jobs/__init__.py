"""The pipeline's jobs and the one place that wraps them (lease, retry, metrics, failures).

Import from :mod:`worker.pipeline`, the public face of this package.
"""

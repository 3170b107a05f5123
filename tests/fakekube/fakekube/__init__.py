"""A fake Kubernetes API server for the integration tests.

Modules:
  util       Status objects, the ApiError exception, JSON and time helpers
  filters    label and field selectors
  patching   merge patch (RFC 7386) and JSON patch (RFC 6902)
  resources  the resource table and the discovery documents
  store      objects, the resourceVersion counter, the event logs, watch registrations
  faults     injected faults and the request log
  server     the HTTP side: API requests, watch streams and the /fake/ control API
"""

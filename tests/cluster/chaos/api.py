# SPDX-License-Identifier: Apache-2.0
"""A small Kubernetes API client for the chaos suite: HTTPS with the cluster's CA and a token.

The suite makes its changes and reads the truth through this client, never through the operator.
Each call opens its own connection: connections are cut on purpose during the tests, and a
request must not fail because an earlier fault broke a kept-alive one.
"""
import http.client
import json
import socket
import ssl
import urllib.parse


class ApiError(Exception):
    def __init__(self, status, message):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Api:
    def __init__(self, url, token, ca_file, timeout=10.0):
        parsed = urllib.parse.urlparse(url)
        self.url = url
        self.host, self.port = parsed.hostname, parsed.port
        self.token = token
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=ca_file)

    def request(self, method, path, body=None, content_type="application/json"):
        """(status, parsed JSON or None). Network errors raise OSError."""
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=self.timeout)
        try:
            headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            try:
                doc = json.loads(raw) if raw else None
            except ValueError:
                doc = None
            return resp.status, doc
        except (http.client.HTTPException, socket.timeout, ssl.SSLError) as e:
            raise OSError(f"{method} {path}: {e}") from e
        finally:
            conn.close()

    def call(self, method, path, body=None, content_type="application/json", ok=(200, 201)):
        status, doc = self.request(method, path, body, content_type)
        if status not in ok:
            message = doc.get("message") if isinstance(doc, dict) else doc
            raise ApiError(status, f"{method} {path}: {message}")
        return doc

    def list_all(self, collection, label_selector=None, field_selector=None, page=500):
        """Every item of a collection, read page by page as a consistent list."""
        items, token = [], None
        while True:
            query = {"limit": str(page)}
            if token:
                query["continue"] = token
            if label_selector:
                query["labelSelector"] = label_selector
            if field_selector:
                query["fieldSelector"] = field_selector
            doc = self.call("GET", collection + "?" + urllib.parse.urlencode(query))
            items.extend(doc.get("items") or [])
            token = (doc.get("metadata") or {}).get("continue")
            if not token:
                return items

    def healthy(self):
        try:
            return self.request("GET", "/readyz")[0] == 200
        except OSError:
            return False

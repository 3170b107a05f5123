# SPDX-License-Identifier: Apache-2.0
"""The chaos suite: the operator against a real kube-apiserver while faults are injected (README.md)."""

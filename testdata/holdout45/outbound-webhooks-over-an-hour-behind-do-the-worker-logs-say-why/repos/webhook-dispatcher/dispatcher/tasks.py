import hashlib
import hmac
import json
import logging
import time

import requests
from celery import shared_task

from dispatcher.endpoints import get_endpoint
from dispatcher.events import load_event

log = logging.getLogger(__name__)
session = requests.Session()
session.headers["User-Agent"] = "Northwind-Webhooks/3.4"


def _sign(secret: str, body: bytes, ts: int) -> str:
    return hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()


@shared_task(name="webhooks.deliver", bind=True, max_retries=8, acks_late=True)
def deliver(self, endpoint_id: str, event_id: str):
    ep = get_endpoint(endpoint_id)
    event = load_event(event_id)
    body = json.dumps(event.payload, separators=(",", ":")).encode()
    ts = int(time.time())
    log.info("delivering %s to %s (%s) attempt=%d", event.type, ep.id, ep.url, self.request.retries + 1)
    resp = session.post(
        ep.url,
        data=body,
        headers={"Content-Type": "application/json", "X-Northwind-Signature": f"t={ts},v1={_sign(ep.secret, body, ts)}"},
    )
    if resp.status_code >= 500:
        raise self.retry(countdown=min(60 * 2 ** self.request.retries, 3600))
    return {"status": resp.status_code, "endpoint": ep.id}

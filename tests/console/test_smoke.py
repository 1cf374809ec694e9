from starlette.testclient import TestClient

from tests.console._seed import Seeded
from tests.console.conftest import OPERATOR, sign_in


def test_smoke(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    for path in [
        "/",
        "/events",
        f"/events/{seeded_db.key_event}",
        "/dead",
        "/replay",
        "/audit",
        f"/events/{seeded_db.xss_event}",
        f"/events/{seeded_db.binary_event}",
    ]:
        r = client.get(path)
        print(path, r.status_code)
        assert r.status_code == 200, r.text

"""The reliability workload on S3 (issue 27, "What it must show" 2): writers in processes started
by fork and by spawn commit to one S3 table through a proxy that loses the answer to some landed
commit PUTs (a 500 after the object landed, or a dropped connection); the history checker of
``delta-occ stress`` then judges the table: versions contiguous, every acknowledged commit present
once, nothing duplicated, rows equal to the model's, the final table equal to delta-kernel-rs's.

The default size keeps the run short; ``DELTA_OCC_S3_STRESS_COMMITS=200`` is the issue's size
(8 writers x 200 commits)."""

from __future__ import annotations

import os
import uuid

from delta_occ import stress

from conftest import BUCKET
from servers.faultproxy import FaultProxy


def test_stress_on_s3_with_lost_acknowledgements(s3_server, tmp_path):
    commits = int(os.environ.get("DELTA_OCC_S3_STRESS_COMMITS", "6"))
    with FaultProxy(s3_server.endpoint, seed=27) as proxy:
        proxy.lose_ack(r"_delta_log/\d{20}\.json$", probability=0.05)
        proxy.lose_ack(r"_delta_log/\d{20}\.json$", probability=0.05, drop=True)
        opts = dict(s3_server.storage_options(), AWS_ENDPOINT_URL=proxy.endpoint)
        cfg = stress.Config(writers=8, transactions=commits, modes=("fork", "spawn"), rounds=2, k=3, seed=27)
        summary = stress.run(f"s3://{BUCKET}/stress-{uuid.uuid4().hex[:8]}", cfg, storage_options=opts, log_dir=str(tmp_path))
        injected = dict(proxy.injected)
        puts = proxy.counts["PUT"]
    print(
        f"\nS3 stress: {commits} transactions x 8 writers (fork, spawn): attempted {summary['attempted']},"
        f" committed {summary['committed']}, conflicts {summary['conflicts']}, versions {summary['versions']},"
        f" {summary['seconds']} s, anomalies {len(summary['anomalies'])}, lost {summary['lost']}, duplicated {summary['duplicated']},"
        f" injected {injected}, PUTs {puts}"
    )
    assert summary["anomalies"] == [], summary["anomalies"][:10]
    assert summary["lost"] == 0 and summary["duplicated"] == 0 and summary["spurious"] == 0, summary
    assert summary["errors"] == {}, summary["errors"]
    assert summary["oracle"] == "delta-kernel-rs"
    assert summary["committed"] >= 8 * commits // 2, summary
    assert injected.get("lose_ack", 0) > 0, "the proxy must have lost some acknowledgements"

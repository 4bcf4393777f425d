"""Planted generator, privacy audit, and the label-based erasure anchors."""

import numpy as np
import pytest
import torch
from opl_vad.erasure import fit_inlp, fit_leace, leace_available
from opl_vad.face_guidance import FaceGuidance, check_face_signal, cosine_alignment_loss
from opl_vad.privacy_audit import PrivacyAudit, largest_angle_deg
from opl_vad.synthetic import make_planted_vad


@pytest.fixture(scope="module")
def planted():
    return make_planted_vad(60, 32, 48, seed=0)


def test_generator_plants_what_it_says(planted):
    d = planted
    assert d.features.shape == (60, 32, 48) and d.features.dtype == np.float32
    assert ((d.snippet_labels.sum(1) > 0) == (d.video_labels == 1)).all()
    B = np.hstack([d.face_basis, d.anomaly_direction[:, None], d.nuisance_basis])
    np.testing.assert_allclose(B.T @ B, np.eye(B.shape[1]), atol=1e-10)
    flipped = (d.face_signal != d.face).mean()
    assert 0.05 < flipped < 0.15  # face_flip = 0.1
    # the face signal lives in span(B_f): projecting it out kills the face-mean difference
    d = make_planted_vad(200, 32, 48, nuisance_scale=0.0, seed=3)
    X = d.features.reshape(-1, 48).astype(float)
    f = d.face.reshape(-1).astype(bool)
    diff = X[f].mean(0) - X[~f].mean(0)
    P = np.eye(48) - d.face_basis @ d.face_basis.T
    assert np.linalg.norm(P @ diff) < 0.2 * np.linalg.norm(diff)


def test_same_basis_seed_shares_bases():
    a = make_planted_vad(4, 8, 24, seed=1, basis_seed=7)
    b = make_planted_vad(4, 8, 24, seed=2, basis_seed=7)
    np.testing.assert_array_equal(a.face_basis, b.face_basis)
    assert not np.array_equal(a.features, b.features)


def test_audit_sees_faces_in_raw_features_and_angles(planted):
    d = planted
    X = d.features.reshape(-1, 48)
    r = PrivacyAudit(folds=3, max_samples=1500).run(
        X, d.face.reshape(-1), np.repeat(d.identity, 32), d.face_basis, d.face_basis
    )
    assert r["face_probe_acc"] > 0.95 and r["identity_probe_acc"] > 0.8
    assert r["face_angle_deg"] == pytest.approx(0.0, abs=1e-5)
    assert largest_angle_deg(d.face_basis, d.nuisance_basis[:, :4]) == pytest.approx(90.0)


@pytest.mark.parametrize("fit", ["LEACE", "INLP"])
def test_label_based_erasure_reaches_chance(planted, fit):
    if fit == "LEACE" and not leace_available():
        pytest.skip("concept-erasure not installed")
    d = planted
    X, f = d.features.reshape(-1, 48), d.face.reshape(-1)
    eraser = fit_leace(X, f) if fit == "LEACE" else fit_inlp(X, f, iterations=6)
    P = eraser.P
    np.testing.assert_allclose(eraser(X[:3]), (X[:3] - eraser.mean) @ P.T + eraser.mean, atol=1e-4)
    r = PrivacyAudit(folds=3, max_samples=1500).run(eraser(X), f)
    assert r["face_probe_acc"] < r["face_chance"] + 0.08


def test_face_signal_checks():
    check_face_signal(torch.rand(2, 5), (2, 5))
    with pytest.raises(ValueError, match="shape"):
        check_face_signal(torch.rand(2, 4), (2, 5))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        check_face_signal(torch.full((2, 5), 1.5), (2, 5))


def test_cosine_alignment_and_anchor_update():
    g = FaceGuidance(4, 2, momentum=0.5)
    r = torch.tensor([[[1.0, 0, 0, 0], [0, 1.0, 0, 0]]])
    face = torch.tensor([[1.0, 0.0]])
    g.train()
    g(torch.zeros(1, 2, 2), r, face)
    torch.testing.assert_close(g.anchor, torch.tensor([1.0, 0, 0, 0]))
    # aligned face-present snippet: zero loss; face-absent snippets are ignored
    assert float(cosine_alignment_loss(r, face, g.anchor)) == pytest.approx(0.0)
    assert float(cosine_alignment_loss(r, torch.tensor([[0.0, 1.0]]), g.anchor)) == 1.0
    with pytest.raises(ValueError, match="readout"):
        FaceGuidance(4, 2, readout="deep")


def test_face_contrast_loss_closed_form():
    import torch
    from opl_vad.face_guidance import face_contrast_loss

    g = torch.Generator().manual_seed(0)
    D, k = 12, 2
    Q, _ = torch.linalg.qr(torch.randn(D, k, generator=g, dtype=torch.float64))
    x = torch.randn(3, 10, D, generator=g, dtype=torch.float64)
    face = torch.zeros(3, 10)
    face[0, :4] = 1
    face[1, 5:] = 1  # video 2 has no face: skipped
    x[1, 5:] += 4 * Q[:, 0]
    loss = face_contrast_loss(x @ Q, x, face)
    d = torch.stack([x[v][face[v] > 0.5].mean(0) - x[v][face[v] < 0.5].mean(0) for v in (0, 1)])
    expected = 1 - (d @ Q).pow(2).sum() / d.pow(2).sum()
    torch.testing.assert_close(loss, expected)
    assert 0.0 <= float(loss) <= 1.0
    # the whole space captures everything; no video with both kinds gives 0
    eye = torch.eye(D, dtype=torch.float64)
    torch.testing.assert_close(
        face_contrast_loss(x @ eye, x, face), torch.tensor(0.0, dtype=x.dtype)
    )
    assert float(face_contrast_loss(x @ Q, x, torch.ones(3, 10))) == 0.0


def test_video_grouped_folds_ignore_per_video_cues():
    # features = a per-video scene vector only; face presence is mostly on or off per video.
    # Snippet-level folds let the probe memorise videos; video-grouped folds do not.
    rng = np.random.default_rng(0)
    V, T = 60, 20
    scene = rng.standard_normal((V, 16))
    rate = rng.choice([0.1, 0.9], V)
    face = (rng.random((V, T)) < rate[:, None]).astype(int).reshape(-1)
    X = np.repeat(scene, T, axis=0) + 0.01 * rng.standard_normal((V * T, 16))
    videos = np.repeat(np.arange(V), T)
    loose = PrivacyAudit(folds=5).run(X, face)
    grouped = PrivacyAudit(folds=5).run(X, face, groups=videos)
    assert loose["face_probe_acc"] > loose["face_chance"] + 0.1
    assert grouped["face_probe_acc"] < grouped["face_chance"] + 0.1
    with pytest.raises(ValueError, match="groups has 3 entries"):
        PrivacyAudit().run(X, face, groups=videos[:3])


def test_mlp_probe_reads_nonlinear_leakage_the_linear_probe_misses():
    rng = np.random.default_rng(0)
    face = rng.integers(0, 2, 300)
    X = rng.standard_normal((300, 3))
    X[:, 0] = np.where(face == 1, 1.0, -1.0) * np.abs(X[:, 0]) * np.sign(X[:, 1])  # XOR-like
    lin = PrivacyAudit(folds=3).run(X, face)
    mlp = PrivacyAudit(folds=3, probe="mlp").run(X, face)
    assert lin["face_probe_acc"] < 0.6 < 0.8 < mlp["face_probe_acc"]
    with pytest.raises(ValueError, match="unknown probe"):
        PrivacyAudit(probe="rbf")


def test_suggested_face_rank_matches_the_planted_contrast():
    from opl_vad.face_guidance import face_contrast_basis, face_contrast_spectrum, suggest_face_rank

    # no motion latent (its within-video means also differ between face-on and face-off
    # snippets), little noise: the noisy face signal's contrast lies in the planted face code
    d = make_planted_vad(80, 32, 48, motion_rank=0, noise_scale=0.05, seed=0)
    share = face_contrast_spectrum(d.features, d.face_signal)
    assert share.shape == (48,) and np.all(np.diff(share) >= -1e-12)
    assert share[-1] == pytest.approx(1.0) and share[3] > 0.98
    assert 1 <= suggest_face_rank(d.features, d.face_signal, energy=0.9) <= 4  # 4 planted dims
    U = face_contrast_basis(d.features, d.face_signal, 4)  # (D, 4)
    assert U.shape == (48, 4) and largest_angle_deg(d.face_basis, U) < 5.0
    with pytest.raises(ValueError, match="both face-present and face-absent"):
        face_contrast_spectrum(d.features, np.ones(d.face.shape))


def test_planted_face_codes_span_every_face_direction_equally():
    """The identity prototypes are centred and whitened: the per-video face codes ``s_v`` (the
    within-video face contrast, read off noise-free features) have equal spread in every planted
    face direction, so the weakest one is identifiable (issue 46)."""
    d = make_planted_vad(400, 8, 32, motion_rank=0, nuisance_scale=0.0, noise_scale=0.0,
                         n_identities=10, seed=0)  # fmt: skip
    codes = []
    for v in range(len(d)):
        on = d.face[v] == 1
        if on.any() and (~on).any():
            codes.append(d.features[v][on].mean(0) - d.features[v][~on].mean(0))
    c = np.asarray(codes, float) @ d.face_basis  # (n, 4) coordinates in the face basis
    per_identity = {}
    for code, ident in zip(c, d.identity[[i for i in range(len(d)) if (d.face[i] == 1).any()
                                          and (d.face[i] == 0).any()]], strict=True):  # fmt: skip
        per_identity.setdefault(int(ident), code)
    P = np.asarray(list(per_identity.values()))
    assert len(P) == 10
    centred = P - P.mean(0)
    np.testing.assert_allclose(centred.T @ centred / 10, np.eye(4) * 1.5**2, atol=1e-3)


def test_per_direction_readout_and_video_anchor():
    from opl_vad.face_guidance import PerDirectionReadout, video_anchors

    # each direction gets its own logit; a zero readout gives BCE = log 2 per direction
    ro = PerDirectionReadout(3)
    with torch.no_grad():
        ro.a.copy_(torch.tensor([1.0, 0.0, 0.0]))
        ro.b.copy_(torch.tensor([0.0, 2.0, 0.0]))
    c = torch.tensor([[[1.0, -1.0, 5.0]]])
    torch.testing.assert_close(ro(c), torch.tensor([[[1.0, 2.0, 0.0]]]))
    # per-video anchors: mean over that video's face-present snippets only, detached
    r = torch.tensor([[[2.0, 0.0], [0.0, 4.0], [4.0, 0.0]],
                      [[0.0, 1.0], [0.0, 3.0], [1.0, 1.0]]], requires_grad=True)  # fmt: skip
    face = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    a = video_anchors(r, face)
    torch.testing.assert_close(a[0, 1], torch.tensor([3.0, 0.0]))
    torch.testing.assert_close(a[1, 0], torch.tensor([0.0, 3.0]))
    assert not a.requires_grad
    # aligned with their own video's anchor: zero loss, although the two videos' faces differ
    loss = cosine_alignment_loss(r, face, a)
    assert float(loss.detach()) == pytest.approx(0.0, abs=1e-6)
    g = FaceGuidance(2, 3, readout="per_direction", anchor="video")
    l_face, l_cos = g(torch.zeros(2, 3, 3), r, face)
    assert float(l_face) == pytest.approx(np.log(2)) and float(l_cos) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="anchor"):
        FaceGuidance(4, 2, anchor="global")

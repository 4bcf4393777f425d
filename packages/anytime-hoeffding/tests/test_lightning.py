"""Lightning path: the shared contract, prequential order, and equality with the direct API."""

import numpy as np
import pytest

pl = pytest.importorskip("lightning.pytorch", reason="needs the 'lightning' extra")
torch = pytest.importorskip("torch", reason="needs the 'lightning' extra")
from anytime_hoeffding.lightning import StreamDataModule, StreamLearnerModule  # noqa: E402
from anytime_hoeffding.streams import make_stream  # noqa: E402
from anytime_hoeffding.tree import AnytimeHoeffdingTreeClassifier  # noqa: E402
from icml26_shared.contract import check_contract  # noqa: E402


def _forward(model, batch):
    return model(batch[0])


def test_shared_contract(tmp_path):
    check_contract(
        lambda: StreamLearnerModule(n_classes=2, warmup=20),
        lambda: StreamDataModule("sea", n=1_500, chunk_size=500, n_holdout=500),
        tmp_path,
        forward_fn=_forward,
        backward=False,  # non-parametric: the tree learns without gradients
    )


def _trainer(tmp_path):
    return pl.Trainer(accelerator="cpu", max_epochs=1, logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False,
                      num_sanity_val_steps=0, default_root_dir=tmp_path)  # fmt: skip


def test_lightning_path_equals_direct_api(tmp_path):
    dm = StreamDataModule("planted_tree", n=6_000, chunk_size=1_000, n_holdout=1_000, seed=3)
    module = StreamLearnerModule(n_classes=2, seed=0)
    _trainer(tmp_path).fit(module, datamodule=dm)
    s = make_stream("planted_tree", 6_000, 3)
    direct = AnytimeHoeffdingTreeClassifier(classes=[0, 1], seed=0)
    for X, y in s.chunks(1_000):
        direct.learn_many(X, y)
    assert module.learner.split_log == direct.split_log
    assert module.learner.n_nodes > 1
    np.testing.assert_array_equal(
        module(torch.from_numpy(s.X[:100])).numpy(), direct.predict_proba_many(s.X[:100])
    )


def test_prequential_metric_is_predict_then_learn(tmp_path):
    dm = StreamDataModule("planted_threshold", n=3_000, chunk_size=1_000, n_holdout=500)
    module = StreamLearnerModule(n_classes=2)
    trainer = _trainer(tmp_path)
    trainer.fit(module, datamodule=dm)
    s = make_stream("planted_threshold", 3_000, 0)
    tree = AnytimeHoeffdingTreeClassifier(classes=[0, 1], seed=0)
    hits = [(s.y[:1_000] == 0).astype(int)]  # the empty tree predicts uniform -> class 0
    tree.learn_many(s.X[:1_000], s.y[:1_000])
    for a in (1_000, 2_000):
        hits.append((tree.predict_many(s.X[a : a + 1_000]) == s.y[a : a + 1_000]).astype(int))
        tree.learn_many(s.X[a : a + 1_000], s.y[a : a + 1_000])
    expected = float(np.concatenate(hits).mean())
    got = float(trainer.callback_metrics["prequential_accuracy"])
    assert got == pytest.approx(expected, abs=1e-6)


def test_forward_shape_and_forest(tmp_path):
    dm = StreamDataModule("sea", n=2_000, chunk_size=500, n_holdout=500)
    module = StreamLearnerModule(n_classes=2, learner="arf", n_models=2)
    _trainer(tmp_path).fit(module, datamodule=dm)
    dm.setup()
    X = torch.from_numpy(dm.holdout.X[:7])
    assert module(X).shape == (7, 2)  # (B, K)


def test_bad_module_arguments():
    with pytest.raises(ValueError, match="unknown learner"):
        StreamLearnerModule(learner="svm")
    with pytest.raises(ValueError, match="unknown stream"):
        StreamDataModule("nope")

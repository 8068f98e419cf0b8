"""Losses: values against scikit-learn/numpy, direction, our keyword call and Ragas' positional
one, options set as Ragas sets them, a loss written as in Ragas, and input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from promptevolver.evaluation._losses import BinaryMetricLoss, Loss, MSELoss

SETTINGS = settings(max_examples=100, deadline=None)


@st.composite
def paired(draw: st.DrawFn, elements: st.SearchStrategy[float]) -> tuple[list[float], list[float]]:
    n = draw(st.integers(1, 40))
    y_true = draw(st.lists(elements, min_size=n, max_size=n))
    y_pred = draw(st.lists(elements, min_size=n, max_size=n))
    return y_true, y_pred


binary_pairs = paired(st.sampled_from([0, 1]))
real_pairs = paired(st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False))


def f1_by_hand(y_true: list[float], y_pred: list[float]) -> float:
    tp = sum(t == 1 and p == 1 for t, p in zip(y_true, y_pred))
    fp = sum(t == 0 and p == 1 for t, p in zip(y_true, y_pred))
    fn = sum(t == 1 and p == 0 for t, p in zip(y_true, y_pred))
    return 1.0 if 2 * tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


# --- Values -------------------------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(pair=binary_pairs)
def test_accuracy_matches_sklearn(pair: tuple[list[float], list[float]]) -> None:
    y_true, y_pred = pair
    value = BinaryMetricLoss(metric="accuracy")(y_true=y_true, y_pred=y_pred)
    assert value == pytest.approx(accuracy_score(y_true, y_pred))
    assert value == pytest.approx(np.mean(np.array(y_true) == np.array(y_pred)))


@pytest.mark.slow
@SETTINGS
@given(pair=binary_pairs)
def test_f1_matches_sklearn(pair: tuple[list[float], list[float]]) -> None:
    y_true, y_pred = pair
    value = BinaryMetricLoss(metric="f1_score")(y_true=y_true, y_pred=y_pred)
    assert value == pytest.approx(f1_by_hand(y_true, y_pred))
    if 1 in y_true or 1 in y_pred:  # F1 is defined: no zero_division convention involved
        assert value == pytest.approx(f1_score(y_true, y_pred))


@pytest.mark.parametrize("n", [1, 5])
def test_f1_without_any_positive_is_one(n: int) -> None:
    assert BinaryMetricLoss(metric="f1_score")(y_true=[0] * n, y_pred=[0] * n) == 1.0


@pytest.mark.parametrize(
    ("y_true", "y_pred"),
    [([1, 0, 0], [0, 0, 0]), ([0, 0, 0], [0, 1, 0]), ([1, 1], [0, 0]), ([0, 0], [1, 1])],
)
def test_f1_with_positives_on_one_side_only_is_zero(y_true: list[int], y_pred: list[int]) -> None:
    assert BinaryMetricLoss(metric="f1_score")(y_true=y_true, y_pred=y_pred) == 0.0


@pytest.mark.slow
@SETTINGS
@given(pair=real_pairs)
def test_mse_matches_numpy(pair: tuple[list[float], list[float]]) -> None:
    y_true, y_pred = pair
    errors = np.array(y_true) - np.array(y_pred)
    mean = MSELoss()(y_true=y_true, y_pred=y_pred)
    total = MSELoss(reduction="sum")(y_true=y_true, y_pred=y_pred)
    assert mean == pytest.approx(float(np.mean(errors**2)), rel=1e-9, abs=1e-9)
    assert total == pytest.approx(float(np.sum(errors**2)), rel=1e-9, abs=1e-9)
    assert MSELoss(reduction="mean")(y_true=y_true, y_pred=y_pred) == mean


def test_losses_accept_numpy_arrays_and_bools() -> None:
    assert BinaryMetricLoss()(y_true=np.array([True, False]), y_pred=np.array([1.0, 1.0])) == 0.5
    assert MSELoss()(y_true=np.array([0.0, 1.0]), y_pred=(0.5, 0.5)) == 0.25


def test_per_sample_correct() -> None:
    binary = BinaryMetricLoss().per_sample_correct(y_true=[1, 0, 1], y_pred=[1, 1, 1])
    np.testing.assert_array_equal(binary, [1.0, 0.0, 1.0])
    mse = MSELoss().per_sample_correct(y_true=[0.0, 1.0, 0.0], y_pred=[0.25, 1.0, 3.0])
    np.testing.assert_allclose(mse, [1 - 0.0625, 1.0, -8.0])


@pytest.mark.slow
@SETTINGS
@given(paired(st.integers(1, 5)), st.lists(st.integers(1, 5), min_size=40, max_size=40))
def test_mse_per_sample_quality_ranks_candidates_as_the_mse_does(pair, other) -> None:
    """A paired comparison of per-sample quality (the final choice) agrees with the MSE."""
    y_true, y_pred = pair
    alt = other[: len(y_true)]
    loss = MSELoss()
    quality = loss.per_sample_correct(y_true=y_true, y_pred=y_pred)
    alt_quality = loss.per_sample_correct(y_true=y_true, y_pred=alt)
    gap = float(np.mean(quality - alt_quality))
    mse_gap = loss(y_true=y_true, y_pred=alt) - loss(y_true=y_true, y_pred=y_pred)
    assert gap == pytest.approx(mse_gap, abs=1e-9)


# --- Calling conventions and errors -------------------------------------------------------------


def test_ragas_positional_call_takes_predictions_first() -> None:
    assert BinaryMetricLoss()([1, 0, 1], [1, 1, 1]) == pytest.approx(2 / 3)  # Ragas 0.4.3: 0.667
    assert MSELoss()([1.0, 2.0], [1.0, 4.0]) == 2.0
    f1 = BinaryMetricLoss(metric="f1_score")
    assert f1([1, 0, 1], [1, 1, 1]) == f1(predicted=[1, 0, 1], actual=[1, 1, 1]) == pytest.approx(0.8)
    loss = MissedPositives()  # asymmetric: the order is checked, not only the value
    assert loss([0, 0, 1, 1], [1, 1, 1, 0]) == loss(y_pred=[0, 0, 1, 1], y_true=[1, 1, 1, 0]) == 2.0


@pytest.mark.parametrize("loss", [BinaryMetricLoss(), MSELoss()], ids=repr)
def test_a_quantity_given_twice_or_missing_is_a_type_error(loss: Loss) -> None:
    with pytest.raises(TypeError, match="y_true is given twice"):
        loss([0, 1], [0, 1], y_true=[0, 1])
    with pytest.raises(TypeError, match="y_pred is given twice"):
        loss([0, 1], y_pred=[0, 1], y_true=[0, 1])
    with pytest.raises(TypeError, match="needs y_pred="):
        loss(y_true=[0, 1])
    with pytest.raises(TypeError, match="needs y_true="):
        loss([0, 1])


@pytest.mark.parametrize(
    "loss", [BinaryMetricLoss(), BinaryMetricLoss(metric="f1_score"), MSELoss()], ids=repr
)
@pytest.mark.parametrize(
    ("y_true", "y_pred", "problem"),
    [
        ([0, 1, 1], [0, 1], "length"),
        ([], [], "empty"),
        ([0, math.nan], [0, 1], "NaN"),
        ([0, 1], [0, math.inf], "finite"),
        ([[0, 1]], [[0, 1]], "1-D"),
    ],
)
def test_invalid_inputs_raise_value_error_naming_the_problem(
    loss: Loss, y_true: list[float], y_pred: list[float], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        loss(y_true=y_true, y_pred=y_pred)


@pytest.mark.parametrize("metric", ["accuracy", "f1_score"])
@pytest.mark.parametrize(
    ("y_true", "y_pred", "name", "value"),
    [([0, 2], [0, 1], "y_true", "2"), ([0, 1], [0.5, 1], "y_pred", "0.5"), ([0, 1], [0, -1], "y_pred", "-1")],
)
def test_binary_loss_rejects_non_binary_values(
    metric: str, y_true: list[float], y_pred: list[float], name: str, value: str
) -> None:
    with pytest.raises(ValueError, match="only 0 and 1") as info:
        BinaryMetricLoss(metric=metric)(y_true=y_true, y_pred=y_pred)  # type: ignore[arg-type]
    assert name in str(info.value) and value in str(info.value)


def test_mse_accepts_non_binary_values() -> None:
    assert MSELoss()(y_true=[2.0, -1.0], y_pred=[0.0, 0.0]) == 2.5


# --- Direction and options ----------------------------------------------------------------------


def test_directions() -> None:
    binary, mse = BinaryMetricLoss(), MSELoss()
    assert binary.higher_is_better is True
    assert mse.higher_is_better is False
    assert binary.better(0.9, 0.5) and not binary.better(0.5, 0.9) and not binary.better(0.5, 0.5)
    assert mse.better(0.1, 0.5) and not mse.better(0.5, 0.1) and not mse.better(0.5, 0.5)
    assert binary.better(0.0, binary.worst()) and mse.better(1e9, mse.worst())
    assert binary.describe()["higher_is_better"] is True
    assert mse.describe()["higher_is_better"] is False


@pytest.mark.parametrize(
    "make",
    [
        lambda: BinaryMetricLoss(metric="precision"),  # type: ignore[arg-type]
        lambda: BinaryMetricLoss(metric="f1"),  # type: ignore[arg-type]
        lambda: MSELoss(reduction="max"),  # type: ignore[arg-type]
        lambda: MSELoss(reduction="none"),  # type: ignore[arg-type]
    ],
)
def test_invalid_constructor_options(make: object) -> None:
    with pytest.raises(ValueError):
        make()  # type: ignore[operator]


def test_constructor_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        BinaryMetricLoss("accuracy")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        MSELoss("sum")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("loss", "option", "value", "label"),
    [
        (BinaryMetricLoss(), "metric", "precision", ([1, 0], [1, 1])),
        (MSELoss(), "reduction", "median", ([1.0, 2.0], [1.0, 4.0])),
    ],
    ids=["metric", "reduction"],
)
def test_a_misspelt_option_set_as_an_attribute_is_refused_at_the_next_use(
    loss: Loss, option: str, value: str, label: tuple[list[float], list[float]]
) -> None:
    """Ragas' options are attributes (``loss.metric = "f1_score"``): the same works here, and an
    unknown value raises instead of silently computing F1 or the mean."""
    setattr(loss, option, value)
    with pytest.raises(ValueError, match=f"{option} must be .*got '{value}'"):
        loss(*label)
    with pytest.raises(ValueError, match=option):
        loss.describe()  # what an optimizer reads before its first call


def test_options_as_ragas_sets_them_attributes_and_subclass_attributes() -> None:
    loss = BinaryMetricLoss()
    loss.metric = "f1_score"
    assert loss([0, 0], [0, 0]) == 1.0 and loss.describe()["metric"] == "f1_score"

    class SumOfSquares(MSELoss):
        reduction = "sum"

    assert SumOfSquares()([1.0, 2.0], [1.0, 4.0]) == 4.0
    assert SumOfSquares(reduction="mean")([1.0, 2.0], [1.0, 4.0]) == 2.0

    class Precision(BinaryMetricLoss):
        metric = "precision"  # type: ignore[assignment]

    with pytest.raises(ValueError, match="got 'precision'"):
        Precision()


class MissedPositives(Loss):
    """Asymmetric: counts human positives the judge missed (false negatives)."""

    higher_is_better = False

    def __init__(self) -> None:
        self.seen: tuple[np.ndarray, np.ndarray] | None = None

    def _compute(self, y_true: np.ndarray, y_pred: np.ndarray) -> float:
        self.seen = (y_true.copy(), y_pred.copy())
        return float(np.sum((y_true == 1) & (y_pred == 0)))


def test_custom_loss_receives_arguments_unswapped() -> None:
    loss = MissedPositives()
    assert loss(y_true=[1, 1, 1, 0], y_pred=[0, 0, 1, 1]) == 2.0
    assert loss.seen is not None
    np.testing.assert_array_equal(loss.seen[0], [1, 1, 1, 0])
    np.testing.assert_array_equal(loss.seen[1], [0, 0, 1, 1])
    assert loss(y_pred=[0, 0, 1, 1], y_true=[1, 1, 1, 0]) == 2.0  # keyword order is irrelevant
    assert loss(y_true=[0, 0, 1, 1], y_pred=[1, 1, 1, 0]) == 1.0
    assert loss.better(1.0, 2.0)


# --- A loss written as in Ragas -----------------------------------------------------------------


class RagasStyleFalseNegatives(Loss):
    """Ragas' shape: ``__call__(self, predicted, actual)`` is the computation (asymmetric)."""

    higher_is_better = False

    def __init__(self) -> None:
        self.calls: list[tuple[list[float], list[float]]] = []

    def __call__(self, predicted: list[float], actual: list[float]) -> float:  # type: ignore[override]
        self.calls.append((predicted, actual))
        return float(sum(a == 1 and p == 0 for p, a in zip(predicted, actual)))


def test_a_ragas_style_loss_instantiates_and_gets_predictions_first_in_every_shape() -> None:
    loss = RagasStyleFalseNegatives()
    predicted, actual = [0, 0, 1, 1], [1, 1, 1, 0]
    assert loss(predicted, actual) == 2.0
    assert loss(predicted=predicted, actual=actual) == 2.0
    assert loss(y_true=actual, y_pred=predicted) == 2.0  # the optimizer's call
    assert loss.calls == [([0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0])] * 3  # lists of floats
    assert loss.better(1.0, 2.0) and loss.worst() == math.inf
    with pytest.raises(ValueError, match="differ in length"):
        loss([0, 1], [1])  # validated before the subclass sees it (Ragas' zip truncated)


def test_a_ragas_style_loss_without_a_direction_is_refused_where_an_optimizer_needs_it() -> None:
    class Agreement(Loss):
        def __call__(self, predicted: list[float], actual: list[float]) -> float:  # type: ignore[override]
            return sum(p == a for p, a in zip(predicted, actual)) / len(actual)

    loss = Agreement()
    assert loss([1, 0], [1, 1]) == 0.5  # usable on its own
    for use in (loss.worst, loss.describe, lambda: loss.better(1.0, 0.0)):
        with pytest.raises(TypeError, match="Agreement declares no direction: set higher_is_better"):
            use()


@pytest.mark.parametrize("returned", [math.nan, math.inf, None, "high"])
def test_a_ragas_style_loss_returning_no_finite_number_is_refused(returned: object) -> None:
    class Broken(Loss):
        higher_is_better = True

        def __call__(self, predicted: list[float], actual: list[float]) -> float:  # type: ignore[override]
            return returned  # type: ignore[return-value]

    with pytest.raises(ValueError, match="Broken.__call__ returned .*not a finite number"):
        Broken()([1], [1])


def test_a_subclass_of_a_shipped_loss_overriding_call_keeps_its_own_call() -> None:
    """Only a loss with no computation of its own is taken as Ragas-shaped: a subclass of
    BinaryMetricLoss that wraps ``__call__`` and calls ``super()`` does not recurse."""

    class Counted(BinaryMetricLoss):
        calls = 0

        def __call__(self, *args: object, **kwargs: object) -> float:  # type: ignore[override]
            type(self).calls += 1
            return super().__call__(*args, **kwargs)  # type: ignore[arg-type]

    loss = Counted()
    assert loss([1, 0, 1], [1, 1, 1]) == pytest.approx(2 / 3) and Counted.calls == 1


def test_a_pydantic_model_may_hold_a_loss() -> None:
    """Ragas' ``Loss`` declares a pydantic schema (a config holding a loss); ours accepts any
    instance as is and refuses anything else."""
    from pydantic import BaseModel, ValidationError

    class Holder(BaseModel):
        loss: Loss

    loss = BinaryMetricLoss(metric="f1_score")
    assert Holder(loss=loss).loss is loss
    assert isinstance(Holder(loss=RagasStyleFalseNegatives()).loss, RagasStyleFalseNegatives)
    with pytest.raises(ValidationError, match="instance of Loss"):
        Holder(loss="accuracy")  # type: ignore[arg-type]

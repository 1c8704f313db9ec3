"""scikit-learn's estimator checks that apply to a private estimator.

All of scikit-learn's checks run on ``LogisticRegression(bounds=(-10, 10), epsilon=10)``, seeded
by the checks themselves where they set ``random_state``, except:

- the ``sample_weight`` checks, which scikit-learn skips because ``fit`` takes no
  ``sample_weight`` (a per-row weight changes the sensitivity the privacy proof bounds);
- the multiclass checks, skipped by the ``multi_class = False`` tag (the learners are binary);
  ``check_classifier_not_supporting_multiclass`` runs and passes;
- ``check_pipeline_consistency``, which scikit-learn skips for a non-deterministic estimator:
  with ``random_state=None`` the noise is secure and two fits differ by design (the seeded case
  is tested in test_estimator.py).

ε = 10 keeps the noise small enough for the checks' accuracy thresholds on their small data
sets; the estimator's accuracy at ε = 1 is measured by python/bench.py.
"""

import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

import dpagg


@parametrize_with_checks([dpagg.LogisticRegression(bounds=(-10, 10), epsilon=10.0)])
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpagg.NotPrivateWarning)
        warnings.simplefilter("ignore", dpagg.DataClippedWarning)
        check(estimator)

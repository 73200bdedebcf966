"""How strong a run's model is: matches, their scores and Elo, the rating ladder.

* :mod:`~asp.app.evaluation.elo`: a match's result, its score and the Elo it implies;
* :mod:`~asp.app.evaluation.matches`: matches played until their score is known well enough;
* :mod:`~asp.app.evaluation.ladder`: every version and mover of a run on one Elo scale.
"""

"""Writes the own-data example of the README: ``cells.csv`` and ``heldout.csv``.

A planted 5-gene OU system (``ou_ident.synthetic.make_problem(5, "degradation",
per_component=5, seed=3)``): control cells and one degradation per gene G0-G3 for training
(``cells.csv``), and a degradation of G4 plus controls as the held-out experiment
(``heldout.csv``); 800 exact stationary draws per condition, values rounded to 4 decimals.
Run from this folder: ``python make_example.py``.
"""

import numpy as np
from ou_ident.synthetic import make_problem

N_CELLS = 800


def main() -> None:
    prob = make_problem(5, "degradation", per_component=5, seed=3)
    rng = np.random.default_rng(0)
    genes = [f"G{i}" for i in range(5)]
    by_target = {env.targets[0]: env for env in prob.environments[1:]}
    header = ",".join([*genes, "perturbation"])

    def rows(env, label):
        X = env.apply(prob.params).sample(N_CELLS, rng)
        return [",".join(f"{v:.4f}" for v in x) + f",{label}" for x in X]

    train = rows(prob.environments[0], "control")
    for k in range(4):
        train += rows(by_target[k], genes[k])
    held = rows(prob.environments[0], "control") + rows(by_target[4], "G4")
    with open("cells.csv", "w") as f:
        f.write("\n".join([header, *train]) + "\n")
    with open("heldout.csv", "w") as f:
        f.write("\n".join([header, *held]) + "\n")
    strengths = {
        genes[k]: round(float(by_target[k].interventions[0].strength), 4) for k in range(5)
    }
    print("planted degradation strengths:", strengths)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""What the benchmarks and tests verify the engine and its stated figures against (numpy).

Never imported by the node, the core or any product path: exact computations and vectorised
mirrors of the rules, each checked against the engine where it mirrors it.

- :mod:`.arl_chain`: exact run lengths of the window policies by Markov chain, and Monte Carlo.
- :mod:`.cusum_limits`: the full-information CUSUM limits the policies are compared with.
- :mod:`.vec3_sim`: a vectorised simulation of ``vec3_scale`` for the honesty benchmarks.
- :mod:`.schema2_history`: schema-2 histories from given squared distances.
- :mod:`.whitening_sim`: a vectorised mirror of the bridge's prewhitening and bias channel.
"""

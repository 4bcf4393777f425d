"""Graph metanetwork on the neural graph (GMN, Lim et al.; NG-GNN, Kofinas et al.).

The MLP is a DAG: node ``(l, i)`` is neuron ``i`` of layer ``l`` with feature ``b_l[i]``
(none for inputs), edge ``(l-1, j) -> (l, i)`` carries ``W_l[i, j]``. Input and output
neurons get learned positional embeddings (they are not permutable), every node a layer
embedding. One message-passing layer, with shared MLPs and mean aggregation (a dense,
batched implementation of the sparse message passing):

* edge update  ``e_ij <- e_ij + MLP_e(e_ij, h_i, h_j)``;
* forward message to ``(l, i)``:  ``mean_j MLP_f(h_{l-1, j}, e_ij)``;
* backward message to ``(l, i)``: ``mean_k MLP_b(h_{l+1, k}, e_ki)``;
* node update  ``h_i <- h_i + MLP_v(h_i, fwd_i, bwd_i)``.

Every operation is per node / per edge or a mean over neighbours, so the network is
equivariant to any relabelling of the hidden nodes of each layer, i.e. to ``G_A``.
Heads: invariant = mean of hidden-node features per layer plus the (ordered) input and
output node features, then an MLP; equivariant = linear read-outs of edge features
(weight edits) and node features (bias edits) to ``out_dim`` channels.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from wsnets.dws import WeightSpaceNet, check_head, invariant_head
from wsnets.weight_space import WeightSpace


class _MessageLayer(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.e_self, self.e_dst, self.e_src = (
            nn.Linear(d, d),
            nn.Linear(d, d, False),
            nn.Linear(d, d, False),
        )
        self.e_out = nn.Linear(d, d)
        self.f_node, self.f_edge = nn.Linear(d, d), nn.Linear(d, d, False)
        self.b_node, self.b_edge = nn.Linear(d, d), nn.Linear(d, d, False)
        self.v_in = nn.Linear(3 * d, d)
        self.v_out = nn.Linear(d, d)

    def forward(self, h: list[torch.Tensor], e: list[torch.Tensor]):
        # h[l]: (B, d_l, D) for l = 0..L; e[l]: (B, d_{l+1}, d_l, D) edges into layer l+1
        L = len(e)
        new_e = []
        for li in range(L):
            z = self.e_self(e[li]) + self.e_dst(h[li + 1])[:, :, None] + self.e_src(h[li])[:, None]
            new_e.append(e[li] + self.e_out(torch.relu(z)))
        e = new_e
        new_h = []
        for li in range(L + 1):
            fwd = bwd = torch.zeros_like(h[li])
            if li > 0:  # messages from layer li-1 along edges e[li-1]
                m = torch.relu(self.f_node(h[li - 1])[:, None] + self.f_edge(e[li - 1]))
                fwd = m.mean(dim=2)
            if li < L:  # messages from layer li+1 along edges e[li]
                m = torch.relu(self.b_node(h[li + 1])[:, :, None] + self.b_edge(e[li]))
                bwd = m.mean(dim=1)
            upd = self.v_out(torch.relu(self.v_in(torch.cat([h[li], fwd, bwd], dim=-1))))
            new_h.append(h[li] + upd)
        return new_h, e


class GMN(WeightSpaceNet):
    """Message-passing graph metanetwork on the neural graph of an MLP.

    Parameters
    ----------
    arch:
        Architecture of the input MLPs.
    hidden:
        Node / edge feature size ``D``.
    depth:
        Number of message-passing layers.
    head, out_dim:
        As :class:`~wsnets.dws.DWSNet`.

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> net = GMN([2, 4, 4, 1], hidden=8, depth=2, head="equivariant", out_dim=3)
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=2)
    >>> from wsnets.weight_space import symmetry_gap
    >>> symmetry_gap(net, v, torch.Generator().manual_seed(0)) < 1e-5
    True
    """

    def __init__(
        self,
        arch: Sequence[int],
        hidden: int = 32,
        depth: int = 3,
        head: str = "invariant",
        out_dim: int = 1,
        in_channels: int = 1,
    ) -> None:
        super().__init__()
        check_head(head, out_dim)
        self.arch, self.head, self.out_dim = tuple(arch), head, out_dim
        L = len(self.arch) - 1
        D = hidden
        self.node_in = nn.Linear(in_channels, D)
        self.edge_in = nn.Linear(in_channels, D)
        self.layer_emb = nn.Parameter(torch.randn(L + 1, D) * 0.1)
        self.edge_emb = nn.Parameter(torch.randn(L, D) * 0.1)
        self.pe_in = nn.Parameter(torch.randn(self.arch[0], D) * 0.1)
        self.pe_out = nn.Parameter(torch.randn(self.arch[-1], D) * 0.1)
        self.layers = nn.ModuleList(_MessageLayer(D) for _ in range(depth))
        if head == "equivariant":
            self.edge_head = nn.Linear(D, out_dim)
            self.node_head = nn.Linear(D, out_dim)
        else:
            pooled = D * (L - 1) + D * (self.arch[0] + self.arch[-1])
            self.out = invariant_head(pooled, 2 * D, out_dim)

    def graph(self, v: WeightSpace):
        """Initial node features ``h[0..L]`` and edge features ``e[0..L-1]``."""
        B, L = v.batch, v.n_layers
        h = [self.pe_in[None].expand(B, -1, -1) + self.layer_emb[0]]
        for li, b in enumerate(v.biases):
            node = self.node_in(b) + self.layer_emb[li + 1]
            if li == L - 1:
                node = node + self.pe_out[None]
            h.append(node)
        e = [self.edge_in(w) + self.edge_emb[li] for li, w in enumerate(v.weights)]
        return h, e

    def forward(self, v: WeightSpace):
        h, e = self.graph(self._check(v))
        for layer in self.layers:
            h, e = layer(h, e)
        if self.head == "equivariant":
            return WeightSpace([self.edge_head(x) for x in e], [self.node_head(x) for x in h[1:]])
        B = v.batch
        parts = [h[0].reshape(B, -1)] + [x.mean(dim=1) for x in h[1:-1]] + [h[-1].reshape(B, -1)]
        return self.out(torch.cat(parts, dim=1))

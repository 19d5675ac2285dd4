"""Device trees for the placement tests, built through the module APIs."""

import uuid

import pytest

from cyquota.conf import CONF
from cyquota import context
from cyquota.placement import aggregates
from cyquota.placement import inventories
from cyquota.placement import providers
from cyquota.placement import traits
from tests import fixtures


@pytest.fixture(autouse=True)
def _clean_placement_conf():
    yield
    for name in list(CONF.placement):
        CONF.clear_override(name, 'placement')


class Tree:
    """Providers and aggregates by name, created one call at a time."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.rp = {}
        self.agg = {}

    def aggregate(self, name):
        return self.agg.setdefault(name, str(uuid.uuid4()))

    def provider(self, name, parent=None, aggs=(), inventory=None,
                 trait_names=()):
        provider = providers.create(
            self.ctx, name,
            parent_provider_uuid=self.rp[parent] if parent else None)
        self.rp[name] = provider.uuid
        if inventory:
            inventories.set_all(self.ctx, provider.uuid, self.generation(name),
                                inventory)
        if aggs:
            aggregates.set_for_provider(
                self.ctx, provider.uuid, self.generation(name),
                [self.aggregate(agg) for agg in aggs])
        if trait_names:
            traits.set_for_provider(self.ctx, provider.uuid,
                                    self.generation(name), trait_names)
        return provider.uuid

    def generation(self, name):
        return providers.get(self.ctx, self.rp[name]).generation

    def name_of(self, provider_uuid):
        return {value: key for key, value in self.rp.items()}[provider_uuid]


FPGA_8 = {'FPGA': {'total': 8}}


def build_seed_tree(tree):
    """Seed 003's tree: every provider offers FPGA, so each one can be a
    candidate on its own; ss1 and ss2 share via their aggregates."""
    tree.provider('cn1', aggs=['aggA'], inventory=FPGA_8)
    tree.provider('numa1_1', parent='cn1', aggs=['aggC'], inventory=FPGA_8)
    tree.provider('numa1_2', parent='cn1', inventory=FPGA_8)
    tree.provider('cn2', aggs=['aggB'], inventory=FPGA_8)
    tree.provider('numa2_1', parent='cn2', inventory=FPGA_8)
    tree.provider('numa2_2', parent='cn2', inventory=FPGA_8)
    tree.provider('ss1', aggs=['aggB'], inventory=FPGA_8,
                  trait_names=[traits.SHARING])
    tree.provider('ss2', aggs=['aggC'], inventory=FPGA_8,
                  trait_names=[traits.SHARING])
    return tree


@pytest.fixture
def tree(sqlite_db, ctx):
    return Tree(ctx)


@pytest.fixture(scope='module')
def _seed_database(tmp_path_factory):
    url = 'sqlite:///%s' % (tmp_path_factory.mktemp('seed') / 'seed.sqlite')
    fixtures.use_database(url)
    return url, build_seed_tree(Tree(context.get_admin_context()))


@pytest.fixture
def seed(_seed_database):
    """The seed tree in a module-wide database that tests only read."""
    url, built = _seed_database
    fixtures.use_database(url, migrate=False)
    return built

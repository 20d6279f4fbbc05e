import pandas as pd

from billing_portal.db import engine
from billing_portal.rates import load_rate_card


def _rate_card_cost(g: pd.DataFrame, card) -> pd.Series:
    """Cost per meter and day, applying tiered prices row by row."""
    total = 0.0
    units = 0.0
    for _, row in g.iterrows():
        tier = card.tier_for(row["meter"], units)
        total += row["quantity"] * tier.unit_price
        units += row["quantity"]
    return pd.Series({"quantity": units, "cost": round(total, 2)})


def build_usage_frame(account_id: str, start, end) -> pd.DataFrame:
    card = load_rate_card(account_id)
    raw = pd.read_sql(
        "SELECT meter, day, hour, quantity FROM usage_events "
        "WHERE account_id = %(a)s AND day BETWEEN %(s)s AND %(e)s ORDER BY day, hour",
        engine,
        params={"a": account_id, "s": start, "e": end},
    )
    return (
        raw.groupby(["meter", "day"], sort=True)
        .apply(lambda g: _rate_card_cost(g, card))
        .reset_index()
    )

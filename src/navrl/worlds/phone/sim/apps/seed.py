"""What QuickBite, Mail and Bank start with in common, and the formats they share.

Every phone starts with the same past QuickBite orders and Shop orders; Mail seeds a
receipt and Bank a card charge for each, so the three apps agree out of the box. This
module holds those seed records with what they are made from (the restaurants and
their menus, the delivery fee), the day the phone lives on (:data:`TODAY`; the Calendar
and Weather apps keep their own), the date format of the three apps and the money
format of every app that shows prices. It imports no app.
"""
from __future__ import annotations

import datetime as _dt

TODAY = "2024-06-15"
"""The phone's today in QuickBite, Mail and Bank (ISO date)."""


def money(x: float) -> str:
    return f"${x:,.2f}"


def short_date(iso: str) -> str:
    d = _dt.date.fromisoformat(iso)
    return f"{d.strftime('%b')} {d.day}"


def days_ago(n: int) -> str:
    return (_dt.date.fromisoformat(TODAY) - _dt.timedelta(days=n)).isoformat()


# ---------------------------------------------------------------------------------- food orders
DELIVERY_FEE = 2.99

RESTAURANTS = [
    # name, cuisine, eta minutes, rating, menu [(dish, price)]
    ("Chipotle", "Mexican", 25, 4.5, [("Burrito Bowl", 10.95), ("Chicken Burrito", 10.45), ("Steak Tacos", 11.25),
                                      ("Chips & Guacamole", 5.15), ("Quesadilla", 9.85), ("Mexican Coke", 3.25)]),
    ("Sweetgreen", "Salads", 20, 4.6, [("Harvest Bowl", 14.45), ("Kale Caesar", 12.95), ("Shroomami", 13.75),
                                       ("Guacamole Greens", 13.45), ("Hibiscus Tea", 3.95)]),
    ("Panda Express", "Chinese", 30, 4.2, [("Orange Chicken", 9.40), ("Beijing Beef", 9.90), ("Chow Mein", 5.20),
                                           ("Fried Rice", 5.20), ("Egg Roll", 2.40)]),
    ("Shake Shack", "Burgers", 28, 4.4, [("ShackBurger", 8.49), ("SmokeShack", 10.29), ("Crinkle Fries", 4.29),
                                         ("Chicken Shack", 9.49), ("Vanilla Shake", 6.19)]),
    ("Starbucks", "Coffee", 15, 4.3, [("Caffe Latte", 4.95), ("Iced Caramel Macchiato", 5.75), ("Cold Brew", 4.45),
                                      ("Matcha Latte", 5.45), ("Pink Drink", 5.25), ("Chai Tea Latte", 5.15),
                                      ("Butter Croissant", 3.45)]),
    ("Sushi Go", "Japanese", 35, 4.7, [("Salmon Roll", 8.50), ("California Roll", 7.25), ("Spicy Tuna Roll", 9.00),
                                       ("Miso Soup", 3.50), ("Edamame", 4.75)]),
    ("Thai Basil", "Thai", 40, 4.5, [("Pad Thai", 13.95), ("Green Curry", 14.50), ("Tom Yum Soup", 7.95),
                                     ("Thai Iced Tea", 4.50), ("Spring Rolls", 6.95)]),
    ("Pizza Palace", "Pizza", 32, 4.1, [("Margherita Pizza", 15.99), ("Pepperoni Pizza", 17.49),
                                        ("Garlic Knots", 5.99), ("Caesar Salad", 8.99), ("Lemonade", 2.99)]),
]


def price_of(restaurant: str, dish: str) -> float:
    for name, _, _, _, menu in RESTAURANTS:
        if name == restaurant:
            return dict(menu)[dish]
    raise KeyError(restaurant)


def make_order(oid: int, restaurant: str, items: list[tuple[str, int, float]], date: str) -> dict:
    """An order record; ``items`` are (dish, qty, unit price)."""
    sub = round(sum(q * p for _, q, p in items), 2)
    return {"id": oid, "restaurant": restaurant, "items": [{"name": n, "qty": q, "price": p} for n, q, p in items],
            "subtotal": sub, "fee": DELIVERY_FEE, "total": round(sub + DELIVERY_FEE, 2), "date": date}


def describe_items(order: dict) -> str:
    return ", ".join((f"{it['qty']} x " if it["qty"] > 1 else "") + it["name"] for it in order["items"])


# Past orders every phone starts with (most recent last). Mail and Bank seed the matching
# receipts and charges from this list, so the three apps agree out of the box.
SEED_ORDERS = [
    # id, restaurant, [(dish, qty)], date
    (4807, "Thai Basil", [("Pad Thai", 1), ("Thai Iced Tea", 1)], "2024-06-02"),
    (4812, "Shake Shack", [("ShackBurger", 2), ("Crinkle Fries", 1)], "2024-06-07"),
    (4816, "Sweetgreen", [("Harvest Bowl", 1)], "2024-06-10"),
    (4821, "Chipotle", [("Burrito Bowl", 1), ("Chips & Guacamole", 1)], "2024-06-13"),
]


def seed_orders() -> list[dict]:
    return [make_order(oid, r, [(n, q, price_of(r, n)) for n, q in its], date) for oid, r, its, date in SEED_ORDERS]


# ---------------------------------------------------------------------------------- shop orders
# Shop orders every phone starts with: Mail seeds their receipts, Bank the matching card charges.
SHOP_RECEIPTS = [
    # order id, item, total, date
    (1038, "Backpack", 64.00, "2024-06-05"),
    (1041, "Wireless Earbuds", 59.99, "2024-06-11"),
]

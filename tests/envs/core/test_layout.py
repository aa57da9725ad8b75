"""Layouts: shipped files load; every malformed grid fails with a message naming where."""

from __future__ import annotations

import re

import numpy as np
import pytest

from orgteams.assets import asset_dir
from orgteams.envs.core.catalog import load_catalog, room_type
from orgteams.envs.core.layout import (
    DOOR,
    FLOOR,
    FURNITURE,
    WALL,
    Layout,
    list_layouts,
    load_layout,
)

SRC = "test-grid"


def parse(lines, rooms=None, furniture=None, require_rooms=False):
    return Layout.from_grid(lines, rooms or {"k": "kitchen"}, furniture or {}, source=SRC,
                            require_rooms=require_rooms)


def raises(msg: str):
    return pytest.raises(ValueError, match=re.escape(msg))


# ---- shipped layouts ----

def test_shipped_layouts_are_listed():
    assert {"studio", "apartment", "house"} <= set(list_layouts())
    assert list_layouts() == sorted(list_layouts())


@pytest.mark.parametrize("name", list_layouts())
def test_shipped_layout_loads_valid(name):
    layout = load_layout(name)
    assert layout.name == name
    types = {room_type(r) for r in layout.rooms}
    assert set(load_catalog().required_rooms) <= types
    names = [f.name for f in layout.furniture]
    assert len(names) == len(set(names))
    for f in layout.furniture:
        assert layout.tiles[f.cell] == FURNITURE
        assert layout.rooms[f.room]
    for d in layout.doors:
        assert layout.tiles[d.cell] == DOOR
    # Loading by path gives the same layout as loading by name.
    assert load_layout(asset_dir("layouts", f"{name}.yaml")) == layout


@pytest.mark.parametrize("name", list_layouts())
def test_round_trip_through_dict(name):
    layout = load_layout(name)
    again = Layout.from_dict(layout.to_dict())
    assert again == layout
    assert np.array_equal(again.tiles, layout.tiles)
    assert np.array_equal(again.room_map, layout.room_map)
    assert again.furniture == layout.furniture
    assert again.doors == layout.doors


def test_different_layouts_are_not_equal():
    assert load_layout("studio") != load_layout("apartment")
    assert load_layout("studio") != "studio"


def test_to_dict_is_a_copy():
    layout = load_layout("studio")
    layout.to_dict()["name"] = "changed"
    assert layout.to_dict()["name"] == "studio"


# ---- furniture naming, doors, rooms ----

def test_furniture_names_number_repeated_types_only():
    apartment = {f.name: f for f in load_layout("apartment").furniture}
    assert {"kitchen_cabinet_1", "kitchen_cabinet_2", "fridge"} <= set(apartment)
    assert "kitchen_cabinet" not in apartment
    assert "fridge_1" not in apartment
    # Numbered in reading order (row by row, left to right).
    assert apartment["kitchen_cabinet_1"].cell == (1, 2)
    assert apartment["kitchen_cabinet_2"].cell == (1, 3)


def test_inline_grid_parses_tiles_rooms_doors_and_furniture(two_rooms):
    assert two_rooms.rooms == ("kitchen", "living_room")
    assert (two_rooms.height, two_rooms.width) == (5, 10)
    assert two_rooms.tiles[0, 0] == WALL
    assert two_rooms.tiles[1, 2] == FLOOR
    assert two_rooms.room_map[1, 2] == 0
    assert two_rooms.room_map[1, 6] == 1
    assert two_rooms.room_map[0, 0] == -1
    [door] = two_rooms.doors
    assert (door.cell, door.rooms, door.initially_open) == ((2, 4), (0, 1), False)
    by_name = {f.name: (f.type, f.cell, f.room) for f in two_rooms.furniture}
    assert by_name == {"fridge": ("fridge", (1, 1), 0),
                       "kitchen_table": ("kitchen_table", (3, 3), 0),
                       "sofa": ("sofa", (2, 8), 1)}


def test_open_door_and_repeated_furniture():
    layout = parse(["#######",
                    "#FkF#l#",
                    "#kkk=l#",
                    "#######"], {"k": "kitchen", "l": "living_room"}, {"F": "fridge"})
    assert [d.initially_open for d in layout.doors] == [True]
    assert [(f.name, f.cell) for f in layout.furniture] == [("fridge_1", (1, 1)),
                                                           ("fridge_2", (1, 3))]


def test_furniture_belongs_to_the_room_with_most_floor_next_to_it():
    layout = parse(["########",
                    "#kkk#ll#",
                    "#kkFlll#",
                    "#kkk+ll#",
                    "########"], {"k": "kitchen", "l": "living_room"}, {"F": "fridge"})
    # F touches the kitchen on three sides and the living room on one.
    assert layout.furniture[0].room == 0
    assert layout.room_map[2, 3] == 0


# ---- malformed grids: exact messages with source, row and column ----

def test_ragged_row():
    with raises(f"{SRC}: row 1, col 2: ragged row: length 2, expected 3 like row 0"):
        parse(["###", "#k", "###"])


def test_empty_grid():
    with raises(f"{SRC}: whole layout: grid is empty"):
        parse([])


def test_unknown_character():
    with raises(f"{SRC}: row 1, col 2: unknown character 'x'; known: '#', '+', '=', ' ', "
                "rooms ['k'], furniture ['F']"):
        parse(["#####", "#kxF#", "#####"], furniture={"F": "fridge"})


def test_room_without_door():
    with raises(f"{SRC}: row 1, col 7: room 'bedroom' has no door"):
        parse(["##########",
               "#kk+ll#mm#",
               "##########"], {"k": "kitchen", "l": "living_room", "m": "bedroom"})


def test_legend_room_without_floor():
    with raises(f"{SRC}: whole layout: room 'bedroom' is in the legend but has no floor cell"):
        parse(["#####", "#kkk#", "#####"], {"k": "kitchen", "b": "bedroom"})


def test_unreachable_cell():
    with raises(f"{SRC}: row 1, col 4: cell is unreachable from row 1, col 1 "
                "(walled off: add a door)"):
        parse(["#######",
               "#kk#kk#",
               "#######"])


def test_missing_required_room():
    with raises(f"{SRC}: whole layout: missing required room 'living_room' "
                "(every household needs kitchen, living_room, bedroom, bathroom)"):
        parse(["#####", "#kkk#", "#####"], require_rooms=True)


def test_floor_on_the_edge():
    with raises(f"{SRC}: row 1, col 0: floor on the edge of the grid: the house must be "
                "closed by walls"):
        parse(["####", "kkk#", "####"])


def test_door_without_floor_on_opposite_sides():
    with raises(f"{SRC}: row 1, col 3: door must have floor on two opposite sides"):
        parse(["######",
               "#kk+##",
               "######"])
    # Floor on two sides that are not opposite is not enough either.
    with raises(f"{SRC}: row 2, col 2: door must have floor on two opposite sides"):
        parse(["#####",
               "#kkk#",
               "#k+##",
               "#####"])


def test_furniture_out_of_reach():
    with raises(f"{SRC}: row 1, col 3: fridge has no floor cell next to it: nobody can reach it"):
        parse(["#####",
               "#k#F#",
               "#####"], furniture={"F": "fridge"})


def test_unknown_furniture_type_suggests_the_closest():
    known = ", ".join(sorted(load_catalog().furniture))
    with raises(f"{SRC}: Unknown furniture type 'fridg'. Did you mean 'fridge'? Known: {known}"):
        parse(["#####", "#kkF#", "#####"], furniture={"F": "fridg"})


def test_unknown_room_type_suggests_the_closest():
    known = ", ".join(sorted(load_catalog().room_colors))
    with raises(f"{SRC}: Unknown room type 'kichen'. Did you mean 'kitchen'? Known: {known}"):
        parse(["#####", "#kkk#", "#####"], {"k": "kichen"})
    # A numeric suffix is allowed and stripped before the check.
    assert parse(["#####", "#kkk#", "#####"], {"k": "kitchen_2"}).rooms == ("kitchen_2",)


def test_bad_legend_keys():
    with raises(f"{SRC}: whole layout: room key 'K' must be one lowercase letter"):
        parse(["#####", "#KKK#", "#####"], {"K": "kitchen"})
    with raises(f"{SRC}: whole layout: furniture key 'f' must be one uppercase letter"):
        parse(["#####", "#kkf#", "#####"], furniture={"f": "fridge"})


# ---- load_layout: names, files ----

def test_unknown_layout_name_suggests_apartment():
    known = ", ".join(sorted(list_layouts() + ["generated:<rooms>:<seed>"]))
    with raises(f"Unknown layout 'apartmnt'. Did you mean 'apartment'? Known: {known}"):
        load_layout("apartmnt")


def test_missing_layout_file(tmp_path):
    path = tmp_path / "nowhere.yaml"
    with raises(f"Layout file not found: {path}"):
        load_layout(path)


@pytest.mark.parametrize(("text", "problem"), [
    ("name: broken\ngrid: [unclosed\n", "not valid YAML: "),
    ("name: norooms\ngrid: |\n  ###\n", "missing required key(s) rooms"),
    ("- just\n- a list\n", "expected a mapping with keys name, grid, rooms, furniture"),
    ("rooms: {k: kitchen}\ngrid: |\n  #####\n  #k?k#\n  #####\n",
     "row 1, col 2: unknown character '?'"),
], ids=["malformed", "missing_key", "not_a_mapping", "unknown_character"])
def test_a_bad_yaml_file_is_one_line_naming_the_file(tmp_path, text, problem):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with raises(f"{path}: {problem}"):
        load_layout(path)


def test_yaml_file_loads_and_takes_its_name_from_the_file(tmp_path):
    source = load_layout("studio").to_dict()
    del source["name"]
    path = tmp_path / "my_studio.yaml"
    import yaml

    path.write_text(yaml.safe_dump(source))
    layout = load_layout(path)
    assert layout.name == "my_studio"
    assert layout.grid == load_layout("studio").grid
    assert layout.source == str(path)


def test_inline_layout_without_required_rooms_round_trips(two_rooms):
    # Regression: to_dict() dropped require_rooms=False, so from_dict() (and with it
    # Scene/HouseholdState.from_dict) refused a grid that had loaded fine.
    assert Layout.from_dict(two_rooms.to_dict()) == two_rooms
    assert "require_rooms" not in load_layout("studio").to_dict()

"""The prompts of the text model v2's tasks (:mod:`synthetic.lines`), in our own wording.

``SCENES`` open most waiting-line requests; ``OPS`` holds each waiting-line family's phrasings
(fields ``{context}``, ``{word}``, ``{index}``), ``PUZZLES`` those of the other families. The
v2 vocabulary (:mod:`training.vocab2`) holds every piece of these strings: changing a
word here changes the vocabulary the shipped weights were trained on (a test pins it).
"""

from __future__ import annotations

SCENES = (
    "You are managing a waiting line at a customer service desk.",
    "You keep the queue at the front desk of a busy clinic.",
    "You are in charge of the line of people waiting at the bank.",
    "People are waiting in line outside a bakery and you keep the list.",
    "You run the waiting list for a small restaurant.",
    "The following people are standing in a queue at the post office.",
    "You help the staff at a ticket office keep track of the line.",
)
OPS: dict[str, tuple[str, ...]] = {
    "copy": (
        "Record these people in the order they arrived:\n{context}\nCopy the list exactly and"
        " give only the final list.",
        "Here is the line:\n{context}\nWrite the same list again, unchanged.",
        "Please copy the following list of people exactly:\n{context}",
    ),
    "reverse": (
        "The line was written in the wrong order:\n{context}\nReverse the order of the list and"
        " give only the final list.",
        "Write this line from the last person to the first:\n{context}",
        "Please reverse the order of the following people:\n{context}",
    ),
    "sort": (
        "Put these people in alphabetical order:\n{context}\nSort the list alphabetically and"
        " give only the final list.",
        "The line should be organized alphabetically:\n{context}\nPlease sort the list.",
        "Sort the following people in alphabetical order of their names:\n{context}",
    ),
    "shuffle": (
        "The line should be randomly shuffled to be fair:\n{context}\nShuffle the list randomly"
        " and give only the final list. The new order must differ from the original.",
        "Mix up the order of these people at random:\n{context}\nMake sure the order changes.",
        "Please randomly shuffle the following line so that the sequence is different:\n{context}",
    ),
    "insert_index": (
        'A new person "{word}" joins the line at position {index}:\n{context}\nPut the new'
        " person at that position and give only the final list.",
        'Insert "{word}" into the following line at position {index}:\n{context}',
        'Please add "{word}" at position {index} of this list:\n{context}',
    ),
    "insert_random": (
        'A new person "{word}" joins the line at a random position:\n{context}\nPut the new'
        " person at any position and give only the final list.",
        'Insert "{word}" anywhere in the following line:\n{context}',
        'Please add "{word}" at a random position of this list:\n{context}',
    ),
    "remove_index": (
        "The person at position {index} has left the line:\n{context}\nRemove the person at"
        " that position and give only the final list.",
        "Remove the person at position {index} from the following line:\n{context}",
        "Please delete position {index} of this list:\n{context}",
    ),
    "remove_random": (
        "One person has left the line:\n{context}\nRemove any one person and give only the"
        " final list.",
        "Remove a random person from the following line:\n{context}",
        "Please delete one person of your choice from this list:\n{context}",
    ),
    "replace_index": (
        'The person at position {index} is replaced with "{word}":\n{context}\nReplace the'
        " person at that position and give only the final list.",
        'Replace position {index} of the following line with "{word}":\n{context}',
        'Please put "{word}" in place of the person at position {index}:\n{context}',
    ),
    "replace_random": (
        'One person in the line is replaced with "{word}":\n{context}\nReplace any one person'
        ' with "{word}" and give only the final list.',
        'Replace a random person of the following line with "{word}":\n{context}',
        'Please put "{word}" in place of one person of your choice:\n{context}',
    ),
    "pick": (
        "Here is the line:\n{context}\nName any two people who are waiting, as a list.",
        "Choose two different people from the following line:\n{context}",
    ),
    "count": (
        "Here is the line:\n{context}\nHow many people are waiting? Give only the number.",
        "Count the people in the following line:\n{context}",
    ),
    "who": (
        "Here is the line:\n{context}\nWho is at position {index}? Give only the name.",
        "Which person stands at position {index} of the following line?\n{context}",
    ),
    "where": (
        'Here is the line:\n{context}\nAt which position is "{word}"? Give only the number.',
        'Find the position of "{word}" in the following line:\n{context}',
    ),
    "long_copy": (
        "Record these people in the order they arrived:\n{context}\nCopy the list exactly and"
        " give only the final list.",
        "Please copy the following long list of people exactly:\n{context}",
    ),
    "roll": (
        "Here is the line:\n{context}\nWrite a numbered roll, one person per line, as 1. Name.",
        "Number the people of the following line, one per line:\n{context}",
    ),
}
PUZZLES = {
    "latin_square": (
        "Generate a Latin square of size {size} with the symbols {symbols}. Only output the"
        " final result as CSV.",
        "Write a {size} by {size} Latin square using the symbols {symbols}, one row per line,"
        " cells separated by commas.",
        "Fill a grid of size {size} with the symbols {symbols} so that each row and each column"
        " holds every symbol once. Output CSV only.",
    ),
    "sudoku": (
        "Fill the positions where the values are 0 in a 4x4 grid with digits 1-4 so that each"
        " column, each row, and each of the four 2x2 subgrids contains all of the digits from 1"
        " to 4.\n\nInput:\n{sudoku}\nOutput:",
        "Solve this 4x4 sudoku. The zeros are blanks; every row, column and 2x2 box must hold"
        " the digits 1 to 4.\nInput:\n{sudoku}\nOutput:",
    ),
    "sum": (
        "Add {a} and {b}. Work column by column.",
        "What is {a} + {b}? Show each column and the carry.",
        "Compute the sum of {a} and {b} step by step.",
    ),
}

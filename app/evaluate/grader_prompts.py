"""The judges' prompts, verbatim from promptfoo (src/prompts/grading.ts @e5c8e017, src/prompts/index.ts,
the factuality prompt of the bundled dist), as JSON chat prompts rendered leaf by leaf with the templates."""

from __future__ import annotations

import json

DEFAULT_GRADING_PROMPT = json.dumps([
    {"role": "system", "content": """You are grading output according to a user-specified rubric. If the \
statement in the rubric is true, then the output passes the test. You respond with a JSON object with this \
structure: {reason: string, pass: boolean, score: number}

Examples:

<Output>Hello world</Output>
<Rubric>Content contains a greeting</Rubric>
{"reason": "the content contains the word 'Hello'", "pass": true, "score": 1.0}

<Output>Avast ye swabs, repel the invaders!</Output>
<Rubric>Does not speak like a pirate</Rubric>
{"reason": "'avast ye' is a common pirate term", "pass": false, "score": 0.0}"""},
    {"role": "user", "content": "<Output>\n{{ output }}\n</Output>\n<Rubric>\n{{ rubric }}\n</Rubric>"},
])

PROMPTFOO_FACTUALITY_PROMPT = json.dumps([
    {"role": "system", "content": "You are a precise factuality evaluator that compares a submitted answer to "
                                  "an expert answer. \n" + """
Your task is to analyze the factual content while ignoring differences in style, grammar, or punctuation.
You must categorize the submission into one of these options:

(A) The submitted answer is a subset of the expert answer and is fully consistent with it.
(B) The submitted answer is a superset of the expert answer and is fully consistent with it.
(C) The submitted answer contains all the same details as the expert answer.
(D) There is a disagreement between the submitted answer and the expert answer.
(E) The answers differ, but these differences don't matter from the perspective of factuality.

Respond ONLY with a JSON object in this format:
{
  "category": "[LETTER]",
  "reason": "[DETAILED EXPLANATION]"
}

- The "category" must be a single letter A, B, C, D, or E.
- Provide a clear, detailed explanation in the "reason" field.
- Your response must be valid JSON with no additional text."""},
    {"role": "user", "content": """I need you to compare these answers:

<question>
{{input}}
</question>

<expert_answer>
{{ideal}}
</expert_answer>

<submitted_answer>
{{completion}}
</submitted_answer>

Please analyze the factual relationship between these answers according to the categories you've been given."""},
])

GEVAL_PROMPT_STEPS = """
Given an evaluation criteria which outlines how you should judge some text, generate 3-4 concise evaluation steps \
for any text based on the criteria below.

Evaluation Criteria:
{{criteria}}

**
IMPORTANT: Please make sure to only return in minified JSON format, with the "steps" key as a list of strings. No \
additional words, explanation or formatting is needed.
Example JSON:
{"steps": <list_of_strings>}
**

JSON:
"""

GEVAL_PROMPT_EVALUATE = """
You will be given one Reply for a Source Text below. Your task is to rate the Reply on one metric.
Please make sure you read and understand these instructions carefully. Please keep this document open while \
reviewing, and refer to it as needed.

Evaluation Criteria:
{{criteria}}

Evaluation Steps:
- {{steps}}
- Given the evaluation steps, return a JSON with two keys: 1) a "score" key ranging from 0 - {{maxScore}}, with \
{{maxScore}} being that it follows the Evaluation Criteria outlined in the Evaluation Steps and 0 being that it \
does not; 2) a "reason" key, a reason for the given score, but DO NOT QUOTE THE SCORE in your reason. Please \
mention specific information from Source Text and Reply in your reason, but be very concise with it!

Source Text:
{{input}}

Reply:
{{output}}

**
IMPORTANT: Please make sure to only return in minified JSON format, with the "score" and "reason" key. No \
additional words, explanation or formatting is needed.

Example JSON:
{"score":0,"reason":"The text does not follow the evaluation steps provided."}
**

JSON:
"""

SELECT_BEST_PROMPT = json.dumps([
    {"role": "system", "content": """You are comparing multiple pieces of text to see which best fits the \
following criteria: {{criteria}}

Here are the pieces of text:

{% for output in outputs %}
<Text index="{{ loop.index0 }}">
{{ output }}
</Text>
{% endfor %}

Output the index of the text that best fits the criteria. You must output a single integer."""},
])

"""The RAG judges' prompts, verbatim from promptfoo 0.123.1 (src/prompts/grading.ts: ANSWER_RELEVANCY_GENERATE,
CONTEXT_RECALL, CONTEXT_RELEVANCE, CONTEXT_FAITHFULNESS_LONGFORM, CONTEXT_FAITHFULNESS_NLI_STATEMENTS), as text
prompts (one user message) rendered with the templates."""

ANSWER_RELEVANCY_GENERATE = """Generate question for the given answer.
Answer:
The PSLV-C56 mission is scheduled to be launched on Sunday, 30 July 2023 at 06:30 IST / 01:00 UTC. It will be \
launched from the Satish Dhawan Space Centre, Sriharikota, Andhra Pradesh, India
Question: When is the scheduled launch date and time for the PSLV-C56 mission, and where will it be launched from?

Answer:{{answer}}
Question:"""

CONTEXT_RECALL = """Given a context, and an answer, analyze each sentence in the answer and classify if the \
sentence can be attributed to the given context or not.
Think in steps and reason before coming to conclusion.

context: Albert Einstein (14 March 1879 – 18 April 1955) was a German-born theoretical physicist,widely held to be \
one of the greatest and most influential scientists of all time. Best known for developing the theory of \
relativity, he also made important contributions to quantum mechanics, and was thus a central figure in the \
revolutionary reshaping of the scientific understanding of nature that modern physics accomplished in the first \
decades of the twentieth century. His mass–energy equivalence formula E = mc2, which arises from relativity theory, \
has been called "the world's most famous equation". He received the 1921 Nobel Prize in Physics "for his services \
to theoretical physics, and especially for his discovery of the law of the photoelectric effect", a pivotal step \
in the development of quantum theory. His work is also known for its influence on the philosophy of science. In a \
1999 poll of 130 leading physicists worldwide by the British journal Physics World, Einstein was ranked the \
greatest physicist of all time. His intellectual achievements and originality have made Einstein synonymous with \
genius.
answer: Albert Einstein born in 14 March 1879 was  German-born theoretical physicist, widely held to be one of the \
greatest and most influential scientists of all time. He received the 1921 Nobel Prize in Physics "for his \
services to theoretical physics. He published 4 papers in 1905.  Einstein moved to Switzerland in 1895
classification
1. Albert Einstein born in 14 March 1879 was  German-born theoretical physicist, widely held to be one of the \
greatest and most influential scientists of all time. The date of birth of Einstein is mentioned clearly in the \
context. So [Attributed]
2. He received the 1921 Nobel Prize in Physics "for his services to theoretical physics. The exact sentence is \
present in the given context. So [Attributed]
3. He published 4 papers in 1905. There is no mention about papers he wrote in given the context. So [Not \
Attributed]
4. Einstein moved to Switzerland in 1895. There is not supporting evidence for this in the given the context. So \
[Not Attributed]

context:{{context}}
answer:{{groundTruth}}
classification:
"""

CONTEXT_RELEVANCE = """Please extract relevant sentences from the provided context that is absolutely required \
answer the following query. If no relevant sentences are found, or if you believe the query cannot be answered \
from the given context, return the phrase "Insufficient Information".  While extracting candidate sentences you're \
not allowed to make any changes to sentences from given context.

query: {{query}}
context: {{context}}
candidate sentences:
"""

CONTEXT_FAITHFULNESS_LONGFORM = """Given a question and answer, create one or more statements from each sentence \
in the given answer.
question: Who was  Albert Einstein and what is he best known for?
answer: He was a German-born theoretical physicist, widely acknowledged to be one of the greatest and most \
influential physicists of all time. He was best known for developing the theory of relativity, he also made \
important contributions to the development of the theory of quantum mechanics.
statements:
Albert Einstein was born in Germany.
Albert Einstein was best known for his theory of relativity.
question: Cadmium Chloride is slightly soluble in this chemical, it is also called what?
answer: alcohol
statements:
Cadmium Chloride is slightly soluble in alcohol.
question: Were Shahul and Jithin of the same nationality?
answer: They were from different countries.
statements:
Shahul and Jithin were from different countries.
question:{{question}}
answer: {{answer}}
statements:
"""

CONTEXT_FAITHFULNESS_NLI_STATEMENTS = """Prompt: Natural language inference
Consider the given context and following statements, then determine whether they are supported by the information \
present in the context.Provide a brief explanation for each statement before arriving at the verdict (Yes/No). \
Provide a final verdict for each statement in order at the end in the given format. Do not deviate from the \
specified format.

Context:
John is a student at XYZ University. He is pursuing a degree in Computer Science. He is enrolled in several \
courses this semester, including Data Structures, Algorithms, and Database Management. John is a diligent student \
and spends a significant amount of time studying and completing assignments. He often stays late in the library to \
work on his projects.
statements:
1. John is majoring in Biology.
2. John is taking a course on Artificial Intelligence.
3. John is a dedicated student.
4. John has a part-time job.
5. John is interested in computer programming.

Answer:
1. John is majoring in Biology.
Explanation: John's major is explicitly mentioned as Computer Science. There is no information suggesting he is \
majoring in Biology.  Verdict: No.
2. John is taking a course on Artificial Intelligence.
Explanation: The context mentions the courses John is currently enrolled in, and Artificial Intelligence is not \
mentioned. Therefore, it cannot be deduced that John is taking a course on AI. Verdict: No.
3. John is a dedicated student.
Explanation: The prompt states that he spends a significant amount of time studying and completing assignments. \
Additionally, it mentions that he often stays late in the library to work on his projects, which implies \
dedication. Verdict: Yes.
4. John has a part-time job.
Explanation: There is no information given in the context about John having a part-time job. Therefore, it cannot \
be deduced that John has a part-time job.  Verdict: No.
5. John is interested in computer programming.
Explanation: The context states that John is pursuing a degree in Computer Science, which implies an interest in \
computer programming. Verdict: Yes.
Final verdict for each statement in order: No. No. Yes. No. Yes.
context:
{{context}}
statements:
{{statements|join("\\n")}}
Answer:
"""

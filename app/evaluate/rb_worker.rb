# A worker process for user Ruby (assertions, providers): reads one JSON request per line on stdin, answers one
# JSON line on stdout. Standard library only (`ruby -e` of this file's text; app/evaluate/rb_code.py starts it).
#
# A request is {"path": file, "function": name, "args": [...]} (promptfoo's wrapper.rb: the file's directory put on
# $LOAD_PATH, the file loaded, the method called, `Class.method` for a class method), or {"code": text, "function":
# "main", "args": [...]} for an inline check. The answer is {"ok": value} or {"error": message, "where": "file:line",
# "trace": text}. What the user's code prints goes to stderr, so it cannot break the protocol.
require 'json'

INLINE = '<inline ruby>'

def chorus_call(request)
  if request.key?('code')
    TOPLEVEL_BINDING.eval(request['code'], INLINE, 1)
  else
    path = request['path']
    folder = File.dirname(File.absolute_path(path))
    $LOAD_PATH.unshift(folder) unless $LOAD_PATH.include?(folder)
    load path
  end
  name = request['function']
  if name.include?('.')
    owner, method = name.split('.', 2)
    Object.const_get(owner).public_send(method, *request['args'])
  else
    TOPLEVEL_BINDING.receiver.send(name, *request['args'])
  end
end

def chorus_where(error)
  if error.is_a?(SyntaxError) && (found = error.message[/\A(.+?):(\d+):/])
    file, line = found.chomp(':').split(/:(?=\d+\z)/)
    return file == INLINE ? "the inline check, line #{[1, line.to_i - 3].max}" : "#{file}:#{line}"
  end
  frames = (error.backtrace || []).reject { |f| f.start_with?('-e:') }
  # the innermost frame in the user's code, past Ruby's own libraries and gems (a socket error names the call)
  libraries = [RbConfig::CONFIG['rubylibprefix'], *(defined?(Gem) ? Gem.path : [])].compact
  frame = frames.find { |f| libraries.none? { |lib| f.start_with?(lib) } } || frames.first
  return '' unless frame

  file, line = frame.split(':')[0, 2]
  # the check's own lines follow a 3-line `def main` header
  file == INLINE ? "the inline check, line #{[1, line.to_i - 3].max}" : "#{file}:#{line}"
end

protocol = STDOUT.dup
STDOUT.reopen(STDERR) # the user's prints
$stdout = STDERR
STDIN.each_line do |line|
  begin
    answer = JSON.generate({ 'ok' => chorus_call(JSON.parse(line)) })
  rescue Exception => e # rubocop:disable Lint/RescueException - every failure of the user's code is an answer
    raise if e.is_a?(Interrupt)

    answer = JSON.generate({ 'error' => "#{e.class}: #{e.message}", 'where' => chorus_where(e),
                             'trace' => ["#{e.class}: #{e.message}", *(e.backtrace || [])].join("\n") })
  end
  protocol.write("#{answer}\n")
  protocol.flush
end

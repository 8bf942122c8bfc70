#include "frontend/python/interpreter.h"

#include "frontend/python/term_module.h"

#include <Python.h>

#include <fmt/format.h>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace shardproof::frontend {

namespace {
std::string python_error_text() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  std::string text = "unknown Python error";
  if (value) {
    if (PyObject *s = PyObject_Str(value)) {
      if (const char *c = PyUnicode_AsUTF8(s))
        text = c;
      Py_DECREF(s);
    }
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
  return text;
}

// Starts CPython once and imports the driver module; throws if our own
// runtime is broken (an installation problem, not a user error).
PyObject *driver_module() {
  static PyObject *module = nullptr;
  if (module)
    return module;
  PyImport_AppendInittab("_shardproof", &init_shardproof_module);
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.use_environment = 0; // PYTHONPATH/PYTHONHOME of another Python must not leak in
  config.user_site_directory = 0;
  config.install_signal_handlers = 0;
  config.write_bytecode = 0;
  PyConfig_SetString(&config, &config.program_name, L"/usr/bin/python3");
  PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status))
    throw std::runtime_error("cannot start the embedded Python interpreter");

  const char *env = std::getenv("SHARDPROOF_PYTHON_PATH");
  std::string dirs = env ? env : SHARDPROOF_PYTHON_DIRS;
  PyObject *sys_path = PySys_GetObject("path"); // borrowed
  std::size_t pos = 0, insert_at = 0;
  while (pos <= dirs.size()) {
    std::size_t end = dirs.find(':', pos);
    if (end == std::string::npos)
      end = dirs.size();
    PyObject *dir = PyUnicode_FromString(dirs.substr(pos, end - pos).c_str());
    PyList_Insert(sys_path, static_cast<Py_ssize_t>(insert_at++), dir);
    Py_DECREF(dir);
    pos = end + 1;
  }
  module = PyImport_ImportModule("shardproof_driver");
  if (!module)
    throw std::runtime_error("cannot load shardproof's Python runtime: " +
                             python_error_text());
  return module;
}

// A Python dict of `variables` (a new reference).
PyObject *string_dict(const std::map<std::string, std::string> &variables) {
  PyObject *dict = PyDict_New();
  for (const auto &[name, value] : variables) {
    PyObject *text = PyUnicode_FromString(value.c_str());
    PyDict_SetItemString(dict, name.c_str(), text);
    Py_DECREF(text);
  }
  return dict;
}

// A Python list of `items` (a new reference).
PyObject *string_list(const std::vector<std::string> &items) {
  PyObject *list = PyList_New(0);
  for (const auto &item : items) {
    PyObject *text = PyUnicode_FromString(item.c_str());
    PyList_Append(list, text);
    Py_DECREF(text);
  }
  return list;
}

// A function of the driver module (a new reference).
PyObject *driver(const char *name = "run_rank") {
  PyObject *function = PyObject_GetAttrString(driver_module(), name);
  if (!function)
    throw std::runtime_error(std::string("shardproof_driver has no ") + name);
  return function;
}
// Raises _shardproof.TraceTimeout in the tracing thread once the limit has
// passed. The exception is delivered between bytecodes, so any pure-Python
// loop stops, and the driver reports the user frame it stopped in.
class Watchdog {
public:
  explicit Watchdog(std::chrono::milliseconds limit)
      : thread_id_(PyThreadState_Get()->thread_id),
        thread_([this, limit] { watch(limit); }) {}

  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    Py_BEGIN_ALLOW_THREADS // the watchdog may be waiting for the GIL
        thread_.join();
    Py_END_ALLOW_THREADS
  }

private:
  void watch(std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, limit, [this] { return done_; }))
      return;
    lock.unlock();
    PyGILState_STATE gil = PyGILState_Ensure();
    if (!done_) // the run may have finished while we waited for the GIL
      PyThreadState_SetAsyncExc(thread_id_, trace_timeout_error());
    PyGILState_Release(gil);
  }

  unsigned long thread_id_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};
} // namespace

int run_python_script(const std::string &path, const std::vector<std::string> &args) {
  driver_module(); // starts the interpreter
  terms::TermStore store;
  ir::Trace scratch;
  RecordingContext context{&store, &scratch, terms::VarKind::Reference};
  set_recording_context(&context);
  std::vector<std::string> all{path};
  all.insert(all.end(), args.begin(), args.end());
  PyObject *argv = PyList_New(0);
  for (const auto &a : all) {
    PyObject *s = PyUnicode_FromString(a.c_str());
    PyList_Append(argv, s);
    Py_DECREF(s);
  }
  PySys_SetObject("argv", argv);
  Py_DECREF(argv);
  PyObject *runpy = PyImport_ImportModule("runpy");
  PyObject *result = nullptr;
  if (runpy) {
    PyObject *run_path = PyObject_GetAttrString(runpy, "run_path");
    PyObject *call_args = Py_BuildValue("(s)", path.c_str());
    PyObject *kwargs = Py_BuildValue("{s:s}", "run_name", "__main__");
    result = PyObject_Call(run_path, call_args, kwargs);
    Py_XDECREF(run_path);
    Py_XDECREF(call_args);
    Py_XDECREF(kwargs);
  }
  int status = 0;
  if (!result) {
    if (PyErr_ExceptionMatches(PyExc_SystemExit)) {
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      PyObject *code = value ? PyObject_GetAttrString(value, "code") : nullptr;
      status = code && PyLong_Check(code) ? static_cast<int>(PyLong_AsLong(code))
               : code == Py_None          ? 0
                                          : 1;
      Py_XDECREF(code);
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(tb);
    } else {
      PyErr_Print();
      status = 1;
    }
  }
  Py_XDECREF(result);
  Py_XDECREF(runpy);
  set_recording_context(nullptr);
  return status;
}

std::optional<TraceFailure> trace_rank(terms::TermStore &store, const RankRun &run,
                                       terms::VarKind leaf_kind, ir::Trace &out) {
  PyObject *run_rank = driver();
  out.rank = run.rank;
  out.world = run.world;
  RecordingContext context{&store,          &out,
                           leaf_kind,       &run.known_collectives,
                           run.witness,     &run.known_placeholders,
                           run.reference,   run.extensions,
                           &run.not_guessed};
  set_recording_context(&context);
  PyObject *environment = string_dict(run.environment);
  PyObject *python_path = string_list(run.python_path);
  PyObject *result;
  {
    Watchdog watchdog(run.time_limit);
    result =
        PyObject_CallFunction(run_rank, "ssiiOO", run.path.c_str(), run.function.c_str(),
                              run.world, run.rank, environment, python_path);
  }
  Py_DECREF(python_path);
  Py_DECREF(environment);
  Py_DECREF(run_rank);
  set_recording_context(nullptr);
  if (!result)
    throw std::runtime_error("shardproof's Python runtime failed: " +
                             python_error_text());
  std::optional<TraceFailure> failure;
  if (result != Py_None) {
    // (kind, file, line, message) from the driver
    const char *kind, *file, *message;
    int line;
    if (!PyArg_ParseTuple(result, "ssis", &kind, &file, &line, &message)) {
      Py_DECREF(result);
      throw std::runtime_error("shardproof's Python runtime returned " +
                               python_error_text());
    }
    std::string name = kind;
    failure = TraceFailure{name == "unsupported" ? TraceFailure::Kind::Unsupported
                           : name == "absent"    ? TraceFailure::Kind::Absent
                                                 : TraceFailure::Kind::BadInput,
                           ir::SourceLoc{file, line, 0, ""}, message};
  }
  Py_DECREF(result);
  return failure;
}

std::vector<std::string> executed_files() {
  PyObject *function = driver("executed_files");
  PyObject *result = PyObject_CallNoArgs(function);
  Py_DECREF(function);
  if (!result || !PyList_Check(result)) {
    Py_XDECREF(result);
    throw std::runtime_error("shardproof's Python runtime failed: " +
                             python_error_text());
  }
  std::vector<std::string> files;
  for (Py_ssize_t i = 0; i < PyList_Size(result); ++i)
    if (const char *file = PyUnicode_AsUTF8(PyList_GetItem(result, i)))
      files.push_back(file);
  Py_DECREF(result);
  return files;
}

std::string virtual_environment_packages(const std::string &venv) {
  namespace fs = std::filesystem;
  std::string version =
      std::to_string(PY_MAJOR_VERSION) + "." + std::to_string(PY_MINOR_VERSION);
  fs::path packages = fs::path(venv) / "lib" / ("python" + version) / "site-packages";
  if (fs::is_directory(packages))
    return packages.string();
  std::string found;
  std::error_code error;
  for (const auto &entry : fs::directory_iterator(fs::path(venv) / "lib", error))
    if (entry.path().filename().string().starts_with("python"))
      found += (found.empty() ? "" : ", ") + entry.path().filename().string();
  throw std::invalid_argument(
      found.empty()
          ? fmt::format(
                "{} is not a virtual environment (it has no lib/python*/site-packages)",
                venv)
          : fmt::format(
                "the virtual environment {} is for {}; shardproof's interpreter is "
                "Python {}: make one with python{} -m venv, or pass --python-path",
                venv, found, version, version));
}

std::vector<RecipeConfig>
recipe_matrix(const std::string &path,
              const std::map<std::string, std::string> &environment) {
  PyObject *function = driver("scan_matrix");
  PyObject *variables = string_dict(environment);
  PyObject *result = PyObject_CallFunction(function, "sO", path.c_str(), variables);
  Py_DECREF(variables);
  Py_DECREF(function);
  if (!result)
    throw std::runtime_error("shardproof's Python runtime failed: " +
                             python_error_text());
  std::vector<RecipeConfig> matrix;
  const char *error = nullptr;
  if (PyUnicode_Check(result)) {
    error = PyUnicode_AsUTF8(result);
  } else {
    for (Py_ssize_t i = 0; i < PyList_Size(result); ++i) {
      const char *entry, *layout;
      if (PyArg_ParseTuple(PyList_GetItem(result, i), "ss", &entry, &layout))
        matrix.push_back({entry, layout});
    }
  }
  std::string message = error ? error : "";
  Py_DECREF(result);
  if (!message.empty())
    throw std::invalid_argument(message);
  return matrix;
}

LaunchPlan launch_plan(const std::string &path, const std::string &launch_file, int world,
                       const std::string &model_entry,
                       const std::map<std::string, std::string> &environment) {
  PyObject *function = driver("launch_plan");
  PyObject *variables = string_dict(environment);
  PyObject *result =
      PyObject_CallFunction(function, "ssisO", path.c_str(), launch_file.c_str(), world,
                            model_entry.c_str(), variables);
  Py_DECREF(variables);
  Py_DECREF(function);
  if (!result)
    throw std::runtime_error("shardproof's Python runtime failed: " +
                             python_error_text());
  LaunchPlan plan;
  std::string error;
  const char *layout = nullptr, *summary = nullptr;
  PyObject *variables_set = nullptr;
  if (PyUnicode_Check(result))
    error = PyUnicode_AsUTF8(result);
  else if (PyArg_ParseTuple(result, "sisO!", &layout, &plan.world, &summary, &PyDict_Type,
                            &variables_set)) {
    plan.layout = layout;
    plan.summary = summary;
    PyObject *key, *value;
    for (Py_ssize_t at = 0; PyDict_Next(variables_set, &at, &key, &value);)
      if (PyUnicode_Check(key) && PyUnicode_Check(value))
        plan.environment[PyUnicode_AsUTF8(key)] = PyUnicode_AsUTF8(value);
  } else {
    PyErr_Clear();
    error = path + ": plan() returned something other than (layout, world, summary, "
                   "environment)";
  }
  Py_DECREF(result);
  if (!error.empty())
    throw std::invalid_argument(error);
  return plan;
}

std::vector<std::string>
launch_configurations(const std::string &path, const std::string &root,
                      const std::map<std::string, std::string> &environment) {
  PyObject *function = driver("launch_configurations");
  PyObject *variables = string_dict(environment);
  PyObject *result =
      PyObject_CallFunction(function, "ssO", path.c_str(), root.c_str(), variables);
  Py_DECREF(variables);
  Py_DECREF(function);
  if (!result)
    throw std::runtime_error("shardproof's Python runtime failed: " +
                             python_error_text());
  std::vector<std::string> files;
  std::string error;
  if (PyUnicode_Check(result))
    error = PyUnicode_AsUTF8(result);
  else
    for (Py_ssize_t i = 0; i < PyList_Size(result); ++i)
      if (PyObject *item = PyList_GetItem(result, i); PyUnicode_Check(item))
        files.emplace_back(PyUnicode_AsUTF8(item));
  Py_DECREF(result);
  if (!error.empty())
    throw std::invalid_argument(error);
  return files;
}

} // namespace shardproof::frontend
